"""The package room: ORT wheels, release archives and folders opened safely (the one reader) and analysed statically."""
