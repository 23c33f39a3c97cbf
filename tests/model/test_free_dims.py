"""Free-dimension overrides: which dims get fixed, and that a session built with them has fixed input shapes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ortgpu.config import Config, ConfigError, load_config
from ortgpu.model.free_dims import fixed_dims_for, input_dim_labels
from ortgpu.model.inputs import InputError
from ortgpu.session import RunFailedError, open_session


def test_open_dims_are_fixed_by_name_and_by_denotation(shape_subgraph_model: Path, denoted_batch_model: Path) -> None:
    by_name = fixed_dims_for(input_dim_labels(shape_subgraph_model), {"x": (8, 4)})
    assert by_name.by_name == {"batch": 8} and not by_name.by_denotation and by_name.complete
    by_denotation = fixed_dims_for(input_dim_labels(denoted_batch_model), {"x": (8, 4)})
    assert by_denotation.by_denotation == {"DATA_BATCH": 8} and not by_denotation.by_name
    assert by_denotation.session_settings() == {"free_dims": {}, "free_dim_denotations": {"DATA_BATCH": 8}}


def test_dims_no_override_can_reach_are_named() -> None:
    labels = {"a": (("batch", None), 4), "b": (("batch", None), (None, None))}
    fixed = fixed_dims_for(labels, {"a": (2, 4), "b": (3, 5)})
    assert fixed.by_name == {}  # fed 2 and 3 for one name: no single value fixes it
    assert fixed.unfixed == ("b[1] (unnamed)", "batch (fed [2, 3])")


@pytest.mark.parametrize("which", ["name", "denotation"])
def test_a_session_with_overrides_has_fixed_inputs_and_folds_its_shape_nodes(
    which: str, shape_subgraph_model: Path, denoted_batch_model: Path
) -> None:
    model = shape_subgraph_model if which == "name" else denoted_batch_model
    free = {"free_dims": {"batch": 3}} if which == "name" else {"free_dim_denotations": {"DATA_BATCH": 3}}
    with open_session(model, "cpu", Config(), collect_placement=True) as plain:
        assert plain.ort.get_inputs()[0].shape[0] != 3
        assert plain.placement.compute_count == 6  # Shape, Gather, Unsqueeze, Concat, Expand, Add
    with open_session(model, "cpu", Config().with_session(**free), collect_placement=True) as fixed:
        assert fixed.ort.get_inputs()[0].shape == [3, 4]
        assert fixed.placement.compute_count == 1  # the shape subgraph was folded into a constant
        out = fixed.run({"x": np.ones((3, 4), np.float32)})[0]
        np.testing.assert_allclose(out[0], [1.5, 0.5, 2.0, 3.0])
        with pytest.raises((InputError, RunFailedError)):
            fixed.run({"x": np.ones((5, 4), np.float32)})


def test_free_dims_in_a_config_file_are_validated(tmp_path: Path) -> None:
    good = tmp_path / "ok.toml"
    good.write_text("[session]\nfree_dims = { batch = 8 }\nfree_dim_denotations = { DATA_BATCH = 8 }\n")
    config = load_config(good)
    assert config.session["free_dims"] == {"batch": 8}
    assert config.session["free_dim_denotations"] == {"DATA_BATCH": 8}
    bad = tmp_path / "bad.toml"
    bad.write_text("[session]\nfree_dims = { batch = 0 }\n")
    with pytest.raises(ConfigError, match="positive integer"):
        load_config(bad)
