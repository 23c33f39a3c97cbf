"""The doctor room: every check of this machine or of a package against it, the one verdict ranking, and the fixes."""
