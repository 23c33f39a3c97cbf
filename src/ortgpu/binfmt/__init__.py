"""The binary-format room: ELF and PE headers (needs, versions, machine) and CUDA fatbin kernel archs, read alone."""
