"""The post-processor: turns a run folder of Locust and specload CSVs into the answer.

`load` finds and reads run files, `windows` decides which seconds count for each rung,
`chunks`, `client_metrics` and `server_metrics` compute per-rung numbers for one
repeat, `aggregate` combines arms and repeats, `crossover` and `recommend` compute the
speedup, C* and engine setting, `quality` collects data-quality warnings, `figures`
draws them and `render` writes summary.csv, summary.json and report.html. The package
reads files only: it never imports Locust, the load generator or the runner.
"""
