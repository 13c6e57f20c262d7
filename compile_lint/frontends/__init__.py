"""Frontends: the command line (its flags, usage checks and report), the language server, the flake8 plugin, --watch."""
