"""Plain values every layer passes around: findings, fixes, edits, text offsets, the codes that
are not rules, results."""
