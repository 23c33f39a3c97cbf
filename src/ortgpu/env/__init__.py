"""The environment room: probes of this machine or of an ORT package, library resolution, diagnoses."""
