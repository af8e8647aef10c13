"""Run the command line as ``python -m ppaux_cli``."""

from ppaux_cli.app import main

if __name__ == "__main__":
    main()
