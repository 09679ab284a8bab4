# Names vulture cannot see used: routes and handlers FastAPI registers by decorator, pydantic and
# SQLAlchemy declarations, hooks a library calls. Made with `vulture ... --make-whitelist` and read
# by hand; anything else vulture reports is dead code (.ci/run fails on it).
seed_rows  # unused function (collectors/metrics.py:89)
ordering  # unused variable (collectors/traces/summary.py:14)
prefill_steps  # unused variable (collectors/traces/summary.py:24)
graph_replay_ops  # unused variable (collectors/traces/summary.py:25)
aux_gap_count  # unused variable (collectors/traces/summary.py:27)
aux_gap_mean_us  # unused variable (collectors/traces/summary.py:28)
aux_gap_median_us  # unused variable (collectors/traces/summary.py:29)
aux_gap_p95_us  # unused variable (collectors/traces/summary.py:30)
aux_bubble_count  # unused variable (collectors/traces/summary.py:31)
aux_idle_per_step_us  # unused variable (collectors/traces/summary.py:32)
aux_busy_per_step_us  # unused variable (collectors/traces/summary.py:33)
aux_main_overlap_us_per_step  # unused variable (collectors/traces/summary.py:34)
step_gpu_time_us_mean  # unused variable (collectors/traces/summary.py:35)
step_gpu_time_us_median  # unused variable (collectors/traces/summary.py:36)
step_gpu_time_us_p95  # unused variable (collectors/traces/summary.py:37)
benchmark_page  # unused function (dashboards/routes.py:76)
alerts_page  # unused function (dashboards/routes.py:128)
matrix_page  # unused function (dashboards/routes.py:153)
compare_page  # unused function (dashboards/routes.py:177)
experiment_page  # unused function (dashboards/routes.py:212)
run_page  # unused function (dashboards/routes.py:229)
plotly_js  # unused function (dashboards/routes.py:291)
favicon  # unused function (dashboards/routes.py:296)
patch_alert  # unused function (service/alerts/routes.py)
get_attribution  # unused function (service/attribution/routes.py:15)
create_baseline  # unused function (service/baselines/routes.py)
move_baseline  # unused function (service/baselines/routes.py)
get_baseline  # unused function (service/baselines/routes.py)
delete_baseline  # unused function (service/baselines/routes.py)
list_baselines  # unused function (service/baselines/routes.py)
get_experiment  # unused function (service/experiments/routes.py:15)
compare_view  # unused function (service/gate/routes.py:23)
get_changepoints  # unused function (service/history/routes.py:17)
get_noise  # unused function (service/history/routes.py:24)
upload_trace  # unused function (service/traces/routes.py:20)
download_trace  # unused function (service/traces/routes.py:46)
trace_timeline  # unused function (service/traces/routes.py:53)
exc  # unused variable (service/github_rest.py: __exit__)
model_config  # unused variable (service/config.py:14)
_pragmas  # unused function (service/db.py:16)
_.get_retry_decision  # unused method (service/jobs/pg.py:35)
_domain_error  # unused function (service/main.py:77)
_validation  # unused function (service/main.py:81)
_http  # unused function (service/main.py:86)
_db_down  # unused function (service/main.py:91)
_unexpected  # unused function (service/main.py:97)
_os_error  # unused function (service/main.py): an exception handler
docs  # unused function (service/main.py:164)
redoc  # unused function (service/main.py:171)
config_hash  # unused variable (service/models/benchmarks.py:42)
builtin  # unused variable (service/models/benchmarks.py:57)
webhook_attempts  # unused variable (service/alerts/queries.py:88)
last_error  # unused variable (service/jobs/tables.py:31)
finished_at  # unused variable (service/jobs/tables.py:33)
model_config  # unused variable (dashboards/auth.py:26)
model_config  # unused variable (service/alerts/schemas.py:50)
model_config  # unused variable (service/baselines/schemas.py:17)
model_config  # unused variable (service/baselines/schemas.py:32)
kv_cache  # unused variable (service/runs/schemas.py:111)
profile_error  # unused variable (service/runs/schemas.py:114)
trace_files  # unused variable (service/runs/schemas.py:117)
_._bench  # unused method (service/runs/schemas.py:124)
_._names  # unused method (service/runs/schemas.py:134)
_._hardware  # unused method (service/runs/schemas.py:141)
_._utc  # unused method (service/runs/schemas.py:152)
_._determinism  # unused method (service/runs/schemas.py:161)
model_config  # unused variable (service/config.py:14)
model_config  # unused variable (service/curations/schemas.py:20)
model_config  # unused variable (service/gate/schemas.py:23)
_._name  # unused method (service/baselines/schemas.py:22)
model_config  # unused variable (service/runs/schemas.py:31)
model_config  # unused variable (service/runs/schemas.py:40)
_._vary  # unused method (service/gate/schemas.py:35)
model_config  # unused variable (service/runs/schemas.py:78)
_._something  # unused method (service/schemas/benchmarks.py:35)
tok_s_mean  # unused variable (service/experiments/schemas.py:16)
model_config  # unused variable (service/runs/schemas.py:91)
se_pct  # unused variable (service/stats/assess.py:61)
_.webhook_attempts  # unused attribute (service/alerts/deliveries.py)
change_point  # unused variable (service/usecases/overview.py): read by dashboards/templates/index.html
post_trace  # unused function (collectors/record.py): a trace to a stored run, for scripts
_._one_trace_list_per_run  # unused method (service/runs/schemas.py): a pydantic validator
evaluation  # unused function (service/alerts/routes.py): a route
get_explain  # unused function (service/explain/routes.py): a route
css  # unused property (service/gate/evidence.py): read by dashboards/templates/_ordering.html
first_run_id  # unused variable (service/experiments/tables.py): an ORM column
bisect_note  # unused variable (service/alerts/schemas.py): a response field
series_done  # unused variable (service/alerts/schemas.py): a response field
series_total  # unused variable (service/alerts/schemas.py): a response field
at_levels  # unused variable (service/explain/schemas.py): a response field
worker_app  # unused function (service/cli/commands/server.py): the app factory uvicorn names by its path
cause  # unused variable (dashboards/home.py): read by the home page's template
login_form  # unused function (dashboards/auth.py): a route
login  # unused function (dashboards/auth.py): a route
logout  # unused function (dashboards/auth.py): a route
step_gpu_time_us  # unused variable (service/gate/schemas.py: trace evidence, an API field)
untested_kernels  # unused variable (service/gate/schemas.py: trace evidence, an API field)
create_curation  # unused function (service/curations/routes.py): a route
list_curations  # unused function (service/curations/routes.py): a route
withdraw_curation  # unused function (service/curations/routes.py): a route
_._metric  # unused method (service/curations/schemas.py): a pydantic validator
_._note  # unused method (service/curations/schemas.py): a pydantic validator
_._kind_fields  # unused method (service/curations/schemas.py): a pydantic validator
closed_alerts  # unused variable (service/curations/schemas.py): a response field
METRIC_VERDICTS  # unused variable (collectors/verdicts.py): the API's types are checked against it
GATE_VERDICTS  # unused variable (collectors/verdicts.py): the API's types are checked against it
run_reads  # unused function (service/cli/commands/server.py): the reads server's entry, started by serve
_forget  # unused function (service/curations/queries.py): a SQLAlchemy event listener
shard  # unused variable (service/models/benchmarks.py: the primary key's second column, written by the triggers on runs)
cmd_gate  # unused function (service/cli/commands/): a command body its parser names by `command` (tests/test_layering.py checks it exists)
cmd_bisect  # unused function (service/cli/commands/): a command body its parser names by `command` (tests/test_layering.py checks it exists)
cmd_comment  # unused function (service/cli/commands/): a command body its parser names by `command` (tests/test_layering.py checks it exists)
cmd_explain  # unused function (service/cli/commands/): a command body its parser names by `command` (tests/test_layering.py checks it exists)
cmd_noise  # unused function (service/cli/commands/): a command body its parser names by `command` (tests/test_layering.py checks it exists)
cmd_attribute  # unused function (service/cli/commands/): a command body its parser names by `command` (tests/test_layering.py checks it exists)
cmd_serve  # unused function (service/cli/commands/): a command body its parser names by `command` (tests/test_layering.py checks it exists)
cmd_worker  # unused function (service/cli/commands/): a command body its parser names by `command` (tests/test_layering.py checks it exists)
cmd_db  # unused function (service/cli/commands/): a command body its parser names by `command` (tests/test_layering.py checks it exists)
cmd_tokens  # unused function (service/cli/commands/): a command body its parser names by `command` (tests/test_layering.py checks it exists)
cmd_seed  # unused function (service/cli/commands/): a command body its parser names by `command` (tests/test_layering.py checks it exists)
LocalJudge  # unused class (service/cli/commands/): a command body its parser names by `command` (tests/test_layering.py checks it exists)
database  # unused variable (service/schemas/health.py): a response field
deleted  # unused variable (service/runs/schemas.py): a response field
trace_files_removed  # unused variable (service/runs/schemas.py): a response field
left_baselines  # unused variable (service/runs/schemas.py): a response field
start_us  # unused variable (service/traces/schemas.py): a response field
end_us  # unused variable (service/traces/schemas.py): a response field
total_steps  # unused variable (service/traces/schemas.py): a response field
_._once  # unused method (service/runs/schemas.py:57): a pydantic validator
