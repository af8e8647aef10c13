"""ppaux's command line: a thin Typer front end over the :mod:`ppaux` library."""
