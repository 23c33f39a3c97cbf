"""The host room: probes of this machine, Linux and Windows side by side (platform, NVML, installed ORT, a load)."""
