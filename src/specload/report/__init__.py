"""The post-processor: turns a run folder of Locust and specload CSVs into the answer.

`run_files` finds and reads a run folder's files; `windows` decides which seconds count
for each rung; `chunks` and `client_metrics` compute the per-rung client figures of one
repeat from its request records, `server_metrics` the server's from its /metrics,
`client_stats` the load processes' health, `locust_history` Locust's own cross-check;
`aggregate` combines arms and repeats; `crossover` and `recommend` give the speedup, C*
and the engine setting; `quality` collects data-quality warnings; `figures` draws them
and `render` writes summary.csv, summary.json and report.html. The package reads files
only: it never imports Locust, the load generator or the runner.
"""
