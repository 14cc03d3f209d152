"""The post-processor: turns a run folder of Locust and specload CSVs into the answer.

`run_files` finds and reads a run folder's files; `windows` decides which seconds count
for each rung; `chunk_arrays` and `client_metrics` compute the per-rung client figures
of one repeat from its request records, `server_metrics` the server's from its /metrics,
`load_health` the load processes' health, `clock_align` puts every load process's times
on the master's clock; `aggregate` combines arms and repeats; `crossover` gives the
speedup with its noise band, every crossing and C* (on SLO goodput too, with `slo`);
`recommend` turns it into a batch-size policy (a decision, as data), which
`recommend_text` words and each engine's `Writer` (`specload.engines`) writes in its
syntax, with the method and draft model `engines.spec_command` reads from the arm's
command; `quality` collects
data-quality warnings; `figures` draws them and `render` writes summary.csv,
summary.json, report.html and the recommended settings' files. The package reads files
only: it never imports Locust, the load generator or the runner.
"""
