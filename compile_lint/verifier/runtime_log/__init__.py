"""`compile-lint explain-log`: Dynamo's graph breaks and recompiles, read from a run's log, as findings.

records: one Dynamo message -> a GraphBreakRecord or RecompileRecord (torch is never imported);
text_log: a `TORCH_LOGS="graph_breaks,recompiles"` stderr capture -> messages;
trace_log: a `TORCH_TRACE` file (the JSON-lines trace tlparse reads) -> records;
reading: paths (files, directories, stdin) -> records, a LogError for what cannot be read.
"""
