"""The checks `ortgpu doctor` runs on this machine, one module per area; each turns gathered facts into Checks."""
