"""`compile-lint explain-log`: Dynamo's graph breaks and recompiles, read from a run's log, as findings.

records: one Dynamo message -> a GraphBreakRecord or RecompileRecord (torch is never imported);
text_log: a `TORCH_LOGS="graph_breaks,recompiles"` stderr capture -> records;
trace_log: a `TORCH_TRACE` directory (the JSON-lines trace tlparse reads) -> records;
sites: each record at the innermost frame of its stack that lies in the project, grouped;
findings: the groups as Diagnostics, joined with the static finding at the same line;
command: the subcommand's arguments and exit codes.
"""
