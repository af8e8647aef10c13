"""One module per command; :mod:`ppaux_cli.app` registers them."""
