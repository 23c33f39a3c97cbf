"""`python -m ortgpu` entry point."""

from ortgpu.cli.main import run

if __name__ == "__main__":
    run()
