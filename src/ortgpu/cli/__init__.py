"""The command-line interface: parse, call one library function, render its result."""
