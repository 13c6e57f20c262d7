"""Frontends: the command line, the language server, the flake8 plugin, --watch and --add-noqa."""
