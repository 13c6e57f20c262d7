"""Settings: the config file and flags, which rules apply to which paths, the torch version rules are judged for."""
