"""The lint engine: files, config, analysis, suppressions, reporters and the CLI."""
