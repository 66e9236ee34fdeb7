/* store/schema — the run database schema as forward migrations: fa_store_migrations[v] takes
 * a database from user_version v to v+1. Never edit a released step; append a new one.
 * Every column and its unit is documented in docs/schema.md. The same migrations build the
 * reference schema every database opened is compared with, and the only source of the table and
 * column names store/copy.c writes into SQL. */
#include "store-impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Conventions (docs/schema.md): times are integer ns (run timestamps unix epoch ns, kernel
 * timestamps in the trace's own clock), sizes integer bytes, FLOPs integer counts.
 * A column holding a C enum declared in a header (fa_activity_kind, fa_pattern, fa_dtype)
 * stores its integer value (those enums only grow at their end); a column whose vocabulary
 * belongs to the schema itself (run kind/status, ceiling source, cluster status) stores a
 * lowercase TEXT word. */

static const char *const migration_0_to_1 =
    /* application_id 'FAdv' marks the file as a fuse-advise run database. */
    "PRAGMA application_id = 1178690678;\n"
    "CREATE TABLE runs (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  kind TEXT NOT NULL,\n"
    "  model_path TEXT,\n"
    "  model_sha256 TEXT,\n"
    "  target TEXT,\n"
    "  device_name TEXT,\n"
    "  threads INTEGER NOT NULL DEFAULT 0,\n"
    "  iters INTEGER NOT NULL DEFAULT 0,\n"
    "  warmup INTEGER NOT NULL DEFAULT 0,\n"
    "  command_line TEXT,\n"
    "  started_at_ns INTEGER NOT NULL,\n"
    "  ended_at_ns INTEGER,\n"
    "  status TEXT NOT NULL,\n"
    "  error TEXT,\n"
    "  peak_activation_bytes INTEGER NOT NULL DEFAULT 0,\n"
    "  source_sha256 TEXT,\n"
    "  pid INTEGER,\n"
    "  host TEXT,\n"
    "  pid_start_ticks INTEGER,\n"
    "  trace_source TEXT,\n"
    "  trace_source_path TEXT,\n"
    "  trace_n_iters INTEGER NOT NULL DEFAULT 0,\n"
    "  n_orphans INTEGER NOT NULL DEFAULT 0,\n"
    "  n_clock_inversions INTEGER NOT NULL DEFAULT 0,\n"
    "  n_parse_errors INTEGER NOT NULL DEFAULT 0,\n"
    "  n_kernels INTEGER NOT NULL DEFAULT 0,\n"
    "  iter_median_ns INTEGER\n"
    ");\n"
    "CREATE INDEX runs_by_status ON runs(status);\n"
    "CREATE TABLE nodes (\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
    "  node_id INTEGER NOT NULL,\n"
    "  name TEXT NOT NULL,\n"
    "  op_type TEXT NOT NULL,\n"
    "  domain TEXT NOT NULL DEFAULT '',\n"
    "  pattern INTEGER,\n"
    "  folded INTEGER NOT NULL DEFAULT 0,\n"
    "  n_inputs INTEGER NOT NULL,\n"
    "  n_outputs INTEGER NOT NULL,\n"
    "  output_shapes TEXT,\n"
    "  flops INTEGER NOT NULL DEFAULT 0,\n"
    "  bytes_read INTEGER NOT NULL DEFAULT 0,\n"
    "  bytes_written INTEGER NOT NULL DEFAULT 0,\n"
    "  PRIMARY KEY (run_id, node_id)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE tensors (\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
    "  tensor_id INTEGER NOT NULL,\n"
    "  name TEXT NOT NULL,\n"
    "  dtype INTEGER NOT NULL,\n"
    "  rank INTEGER NOT NULL,\n"
    "  shape TEXT,\n"
    "  bytes INTEGER NOT NULL DEFAULT 0,\n"
    "  producer INTEGER NOT NULL DEFAULT -1,\n"
    "  flags INTEGER NOT NULL DEFAULT 0,\n"
    "  is_const INTEGER NOT NULL DEFAULT 0,\n"
    "  is_initializer INTEGER NOT NULL DEFAULT 0,\n"
    "  is_graph_input INTEGER NOT NULL DEFAULT 0,\n"
    "  is_graph_output INTEGER NOT NULL DEFAULT 0,\n"
    "  PRIMARY KEY (run_id, tensor_id)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE consumers (\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
    "  tensor_id INTEGER NOT NULL,\n"
    "  node_id INTEGER NOT NULL,\n"
    "  input_index INTEGER NOT NULL,\n"
    "  PRIMARY KEY (run_id, tensor_id, node_id, input_index)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE kernels (\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
    "  seq INTEGER NOT NULL,\n"
    "  kind INTEGER NOT NULL,\n"
    "  name TEXT,\n"
    "  op_type TEXT,\n"
    "  node INTEGER NOT NULL DEFAULT -1,\n"
    "  node_name TEXT,\n"
    "  iter INTEGER NOT NULL DEFAULT -1,\n"
    "  device INTEGER NOT NULL DEFAULT -1,\n"
    "  stream INTEGER NOT NULL DEFAULT 0,\n"
    "  pid INTEGER NOT NULL DEFAULT 0,\n"
    "  tid INTEGER NOT NULL DEFAULT 0,\n"
    "  start_ns INTEGER NOT NULL,\n"
    "  end_ns INTEGER NOT NULL,\n"
    "  correlation INTEGER NOT NULL DEFAULT -1,\n"
    "  external_id INTEGER NOT NULL DEFAULT -1,\n"
    "  grid_x INTEGER NOT NULL DEFAULT 0,\n"
    "  grid_y INTEGER NOT NULL DEFAULT 0,\n"
    "  grid_z INTEGER NOT NULL DEFAULT 0,\n"
    "  block_x INTEGER NOT NULL DEFAULT 0,\n"
    "  block_y INTEGER NOT NULL DEFAULT 0,\n"
    "  block_z INTEGER NOT NULL DEFAULT 0,\n"
    "  registers INTEGER NOT NULL DEFAULT 0,\n"
    "  static_smem INTEGER NOT NULL DEFAULT 0,\n"
    "  dynamic_smem INTEGER NOT NULL DEFAULT 0,\n"
    "  local_mem INTEGER NOT NULL DEFAULT 0,\n"
    "  bytes_read INTEGER NOT NULL DEFAULT 0,\n"
    "  bytes_written INTEGER NOT NULL DEFAULT 0,\n"
    "  flops INTEGER NOT NULL DEFAULT 0,\n"
    "  occupancy REAL NOT NULL DEFAULT -1,\n"
    "  flags INTEGER NOT NULL DEFAULT 0,\n"
    "  PRIMARY KEY (run_id, seq)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE device_ceilings (\n"
    "  device_key TEXT NOT NULL,\n"
    "  name TEXT NOT NULL,\n"
    "  kind TEXT NOT NULL,\n"
    "  value REAL NOT NULL,\n"
    "  unit TEXT NOT NULL,\n"
    "  source TEXT NOT NULL,\n"
    "  measured_at_ns INTEGER NOT NULL,\n"
    "  detail TEXT,\n"
    "  PRIMARY KEY (device_key, name)\n"
    ") WITHOUT ROWID;\n";

/* Version 2: the run tag of the CI gate, and the (empty) tables of the later pipeline stages
 * (analysis, advisor plans, why-not, fused kernels, benchmark samples), so those stages add
 * columns through migrations instead of redesigning. */
static const char *const migration_1_to_2 =
    "ALTER TABLE runs ADD COLUMN tag TEXT;\n"
    "CREATE INDEX runs_by_tag ON runs(tag, id);\n"
    "CREATE TABLE analysis_kernels (\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
    "  seq INTEGER NOT NULL,\n"
    "  arithmetic_intensity REAL,\n"
    "  achieved_gbs REAL,\n"
    "  achieved_gflops REAL,\n"
    "  roof_pct REAL,\n"
    "  bound TEXT,\n"
    "  PRIMARY KEY (run_id, seq)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE analysis_chains (\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
    "  chain_id INTEGER NOT NULL,\n"
    "  members_json TEXT NOT NULL,\n"
    "  time_ns INTEGER NOT NULL DEFAULT 0,\n"
    "  share REAL,\n"
    "  intermediate_bytes INTEGER NOT NULL DEFAULT 0,\n"
    "  launches INTEGER NOT NULL DEFAULT 0,\n"
    "  max_saving_ns INTEGER,\n"
    "  PRIMARY KEY (run_id, chain_id)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE analysis_edges (\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
    "  tensor_id INTEGER NOT NULL,\n"
    "  producer INTEGER NOT NULL,\n"
    "  consumer INTEGER NOT NULL,\n"
    "  bytes_written INTEGER NOT NULL DEFAULT 0,\n"
    "  bytes_read INTEGER NOT NULL DEFAULT 0,\n"
    "  other_consumers INTEGER NOT NULL DEFAULT 0,\n"
    "  is_graph_output INTEGER NOT NULL DEFAULT 0,\n"
    "  PRIMARY KEY (run_id, tensor_id, consumer)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE analysis_summary (\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
    "  key TEXT NOT NULL,\n"
    "  value REAL,\n"
    "  unit TEXT,\n"
    "  text TEXT,\n"
    "  PRIMARY KEY (run_id, key)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE plans (\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
    "  plan_id INTEGER NOT NULL,\n"
    "  created_at_ns INTEGER NOT NULL,\n"
    "  plan_hash TEXT,\n"
    "  target TEXT,\n"
    "  arch TEXT,\n"
    "  options_json TEXT,\n"
    "  status TEXT NOT NULL DEFAULT 'proposed',\n"
    "  PRIMARY KEY (run_id, plan_id)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE clusters (\n"
    "  run_id INTEGER NOT NULL,\n"
    "  plan_id INTEGER NOT NULL,\n"
    "  cluster_id INTEGER NOT NULL,\n"
    "  kind TEXT NOT NULL,\n"
    "  members_json TEXT NOT NULL,\n"
    "  saved_bytes INTEGER NOT NULL DEFAULT 0,\n"
    "  saved_launches INTEGER NOT NULL DEFAULT 0,\n"
    "  recompute_us REAL,\n"
    "  est_saving_us REAL,\n"
    "  est_saving_pct REAL,\n"
    "  registers INTEGER,\n"
    "  spill_bytes INTEGER,\n"
    "  occupancy REAL,\n"
    "  status TEXT NOT NULL,\n"
    "  reason TEXT,\n"
    "  measured_saving_us REAL,\n"
    "  max_rel_error REAL,\n"
    "  PRIMARY KEY (run_id, plan_id, cluster_id),\n"
    "  FOREIGN KEY (run_id, plan_id) REFERENCES plans(run_id, plan_id) ON DELETE CASCADE\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE why_not (\n"
    "  run_id INTEGER NOT NULL,\n"
    "  plan_id INTEGER NOT NULL,\n"
    "  seq INTEGER NOT NULL,\n"
    "  producer INTEGER NOT NULL DEFAULT -1,\n"
    "  consumer INTEGER NOT NULL DEFAULT -1,\n"
    "  tensor_id INTEGER NOT NULL DEFAULT -1,\n"
    "  reason_code TEXT NOT NULL,\n"
    "  reason TEXT NOT NULL,\n"
    "  PRIMARY KEY (run_id, plan_id, seq),\n"
    "  FOREIGN KEY (run_id, plan_id) REFERENCES plans(run_id, plan_id) ON DELETE CASCADE\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE fused_kernels (\n"
    "  run_id INTEGER NOT NULL,\n"
    "  plan_id INTEGER NOT NULL,\n"
    "  cluster_id INTEGER NOT NULL,\n"
    "  target TEXT NOT NULL,\n"
    "  arch TEXT,\n"
    "  name TEXT NOT NULL,\n"
    "  source_sha256 TEXT,\n"
    "  source_path TEXT,\n"
    "  registers INTEGER,\n"
    "  spill_bytes INTEGER,\n"
    "  static_smem INTEGER,\n"
    "  local_mem INTEGER,\n"
    "  compile_ns INTEGER,\n"
    "  status TEXT NOT NULL,\n"
    "  error TEXT,\n"
    "  PRIMARY KEY (run_id, plan_id, cluster_id),\n"
    "  FOREIGN KEY (run_id, plan_id) REFERENCES plans(run_id, plan_id) ON DELETE CASCADE\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE benchmarks (\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
    "  plan_id INTEGER NOT NULL DEFAULT 0,\n"
    "  subject TEXT NOT NULL,\n"
    "  cluster_id INTEGER NOT NULL DEFAULT -1,\n"
    "  iter INTEGER NOT NULL,\n"
    "  latency_ns INTEGER NOT NULL,\n"
    "  PRIMARY KEY (run_id, plan_id, subject, cluster_id, iter)\n"
    ") WITHOUT ROWID;\n";

/* Version 3: the symbolic input dims a model run bound to their default value because no
 * --shape/--batch named them ("batch=1,seq=1"; NULL when none). */
static const char *const migration_2_to_3 = "ALTER TABLE runs ADD COLUMN dim_defaults TEXT;\n";

/* Version 4: the end-to-end error of an applied plan (model outputs, fused vs unfused: max
 * |a-b| / max(|b|, 1e-12)), so `report` rebuilds summary.json from the database alone; NULL
 * when the plan was not applied end to end. */
static const char *const migration_3_to_4 = "ALTER TABLE plans ADD COLUMN e2e_max_rel_error REAL;\n";

/* Version 5: what a cluster kept inside plans.options_json becomes typed columns (and a
 * post-op table), plus the cost model's basis text (issue 19), so `report` rebuilds every
 * cluster field from columns; the advisor's options become plan columns and options_json is
 * dropped. Old rows are moved with SQLite's JSON1 functions; a plan whose document is missing or
 * malformed keeps NULL in the new columns (the readers' "unknown"). */
static const char *const migration_4_to_5 =
    "ALTER TABLE plans ADD COLUMN max_ops INTEGER;\n"
    "ALTER TABLE plans ADD COLUMN max_inputs INTEGER;\n"
    "ALTER TABLE plans ADD COLUMN occupancy_floor REAL;\n"
    "ALTER TABLE plans ADD COLUMN gate INTEGER;\n"
    "ALTER TABLE clusters ADD COLUMN label TEXT;\n"
    "ALTER TABLE clusters ADD COLUMN anchor INTEGER;\n"
    "ALTER TABLE clusters ADD COLUMN depends_on INTEGER;\n"
    "ALTER TABLE clusters ADD COLUMN reduction TEXT;\n"
    "ALTER TABLE clusters ADD COLUMN reduce_axis INTEGER;\n"
    "ALTER TABLE clusters ADD COLUMN epsilon REAL;\n"
    "ALTER TABLE clusters ADD COLUMN block_size INTEGER;\n"
    "ALTER TABLE clusters ADD COLUMN inputs_json TEXT;\n"
    "ALTER TABLE clusters ADD COLUMN outputs_json TEXT;\n"
    "ALTER TABLE clusters ADD COLUMN basis TEXT;\n"
    "CREATE TABLE cluster_post_ops (\n"
    "  run_id INTEGER NOT NULL,\n"
    "  plan_id INTEGER NOT NULL,\n"
    "  cluster_id INTEGER NOT NULL,\n"
    "  seq INTEGER NOT NULL,\n"
    "  spec TEXT NOT NULL,\n"
    "  operand_tensor INTEGER NOT NULL DEFAULT -1,\n"
    "  PRIMARY KEY (run_id, plan_id, cluster_id, seq),\n"
    "  FOREIGN KEY (run_id, plan_id, cluster_id) REFERENCES clusters(run_id, plan_id, cluster_id) ON DELETE CASCADE\n"
    ") WITHOUT ROWID;\n"
    "UPDATE plans SET\n"
    "  max_ops = json_extract(options_json, '$.max_ops'),\n"
    "  max_inputs = json_extract(options_json, '$.max_inputs'),\n"
    "  occupancy_floor = json_extract(options_json, '$.occupancy_floor'),\n"
    "  gate = CASE json_type(options_json, '$.no_gate') WHEN 'true' THEN 0 WHEN 'false' THEN 1 END\n"
    "  WHERE json_valid(options_json);\n"
    "CREATE TEMP TABLE v5_cluster_docs AS\n"
    "  SELECT p.run_id AS run_id, p.plan_id AS plan_id, json_extract(j.value, '$.id') AS cluster_id, j.value AS doc\n"
    "  FROM plans p, json_each(CASE WHEN json_valid(p.options_json) THEN p.options_json ELSE '{}' END,\n"
    "                           '$.clusters') j\n"
    "  WHERE j.type = 'object';\n"
    "UPDATE clusters SET\n"
    "  label = (SELECT json_extract(d.doc, '$.label') FROM v5_cluster_docs d WHERE d.run_id = clusters.run_id\n"
    "           AND d.plan_id = clusters.plan_id AND d.cluster_id = clusters.cluster_id),\n"
    "  anchor = (SELECT json_extract(d.doc, '$.anchor') FROM v5_cluster_docs d WHERE d.run_id = clusters.run_id\n"
    "            AND d.plan_id = clusters.plan_id AND d.cluster_id = clusters.cluster_id),\n"
    "  depends_on = (SELECT json_extract(d.doc, '$.depends_on') FROM v5_cluster_docs d WHERE d.run_id = clusters.run_id\n"
    "                AND d.plan_id = clusters.plan_id AND d.cluster_id = clusters.cluster_id),\n"
    "  reduction = (SELECT json_extract(d.doc, '$.reduction') FROM v5_cluster_docs d WHERE d.run_id = clusters.run_id\n"
    "               AND d.plan_id = clusters.plan_id AND d.cluster_id = clusters.cluster_id),\n"
    "  reduce_axis = (SELECT json_extract(d.doc, '$.reduce_axis') FROM v5_cluster_docs d WHERE d.run_id = clusters.run_id\n"
    "                 AND d.plan_id = clusters.plan_id AND d.cluster_id = clusters.cluster_id),\n"
    "  epsilon = (SELECT json_extract(d.doc, '$.epsilon') FROM v5_cluster_docs d WHERE d.run_id = clusters.run_id\n"
    "             AND d.plan_id = clusters.plan_id AND d.cluster_id = clusters.cluster_id),\n"
    "  block_size = (SELECT json_extract(d.doc, '$.block_size') FROM v5_cluster_docs d WHERE d.run_id = clusters.run_id\n"
    "                AND d.plan_id = clusters.plan_id AND d.cluster_id = clusters.cluster_id),\n"
    "  inputs_json = (SELECT json(json_extract(d.doc, '$.inputs')) FROM v5_cluster_docs d\n"
    "                 WHERE d.run_id = clusters.run_id AND d.plan_id = clusters.plan_id\n"
    "                 AND d.cluster_id = clusters.cluster_id AND json_type(d.doc, '$.inputs') = 'array'),\n"
    "  outputs_json = (SELECT json(json_extract(d.doc, '$.outputs')) FROM v5_cluster_docs d\n"
    "                  WHERE d.run_id = clusters.run_id AND d.plan_id = clusters.plan_id\n"
    "                  AND d.cluster_id = clusters.cluster_id AND json_type(d.doc, '$.outputs') = 'array');\n"
    "INSERT OR IGNORE INTO cluster_post_ops (run_id, plan_id, cluster_id, seq, spec, operand_tensor)\n"
    "  SELECT d.run_id, d.plan_id, d.cluster_id, k.key, k.value,\n"
    "         coalesce(json_extract(d.doc, '$.post_op_inputs[' || k.key || ']'), -1)\n"
    "  FROM v5_cluster_docs d JOIN clusters c ON c.run_id = d.run_id AND c.plan_id = d.plan_id\n"
    "       AND c.cluster_id = d.cluster_id, json_each(d.doc, '$.post_ops') k\n"
    "  WHERE json_type(d.doc, '$.post_ops') = 'array' AND k.type = 'text';\n"
    "DROP TABLE v5_cluster_docs;\n"
    "ALTER TABLE plans DROP COLUMN options_json;\n";

/* Version 6: the applied plan's end-to-end verdict (fa_e2e_verdict words "win", "loss",
 * "no-clusters"; NULL when not applied end to end), so `report`, `runs` and `gate` rebuilt from
 * the database alone never present a plan slower than its baseline as a win (issue 18). Plans
 * stored before keep NULL: their verdict was never recorded. */
static const char *const migration_5_to_6 = "ALTER TABLE plans ADD COLUMN e2e_verdict TEXT;\n";

/* Version 7: an attention cluster's score tensors (bytes the unfused ops hold at once and the
 * fused kernel never materialises: its peak-memory drop, issue 33), so the report reads it from
 * the database. Earlier clusters keep NULL (no attention cluster existed). */
static const char *const migration_6_to_7 = "ALTER TABLE clusters ADD COLUMN score_bytes INTEGER;\n";

/* Version 8: each cluster's kernel signature (fa_cluster_signature: kind, then per member its op,
 * input and output shapes, FLOPs and bytes), composed once by the advisor and stored with the
 * plan, so later plans look its measurements up by it instead of composing it again from the
 * stored nodes. Clusters stored before keep NULL: their measurements are not looked up. */
static const char *const migration_7_to_8 = "ALTER TABLE clusters ADD COLUMN signature TEXT;\n";

/* Version 9: the terms of each cluster's predicted saving (issue 36: the members' profile time, the
 * dispatch term, the fused kernel's predicted time, the probe's or lookup's fused/unfused ratio),
 * the spread of past predictions of its kind on this machine quoted with it (±%, and over how many
 * clusters), and the applier's measured counterparts (the unfused sub-graph's and the fused
 * kernel's medians in the paired benchmark), so a miss is diagnosed term by term from the database.
 * Clusters stored before keep NULL: their terms were only in the basis text. */
static const char *const migration_8_to_9 = "ALTER TABLE clusters ADD COLUMN pred_members_us REAL;\n"
                                             "ALTER TABLE clusters ADD COLUMN pred_dispatch_us REAL;\n"
                                             "ALTER TABLE clusters ADD COLUMN pred_fused_us REAL;\n"
                                             "ALTER TABLE clusters ADD COLUMN pred_ratio REAL;\n"
                                             "ALTER TABLE clusters ADD COLUMN est_spread_pct REAL;\n"
                                             "ALTER TABLE clusters ADD COLUMN est_spread_n INTEGER;\n"
                                             "ALTER TABLE clusters ADD COLUMN meas_unfused_us REAL;\n"
                                             "ALTER TABLE clusters ADD COLUMN meas_fused_us REAL;\n";

/* Version 10: whether a MatMul/Gemm epilogue cluster is generated code over the product's blocks
 * of rows instead of library post-ops (issue 33: the epilogues post-ops cannot express). Clusters
 * stored before read back 0: every epilogue then was post-ops. */
static const char *const migration_9_to_10 = "ALTER TABLE clusters ADD COLUMN epilogue_generated INTEGER;\n";

/* Version 11: the plan's layout (issue 35: chosen per model by measurement, or named by
 * --layout / FA_BLOCKED_LAYOUT; plan/plan.h fa_plan_layout) and the figures that decided it: the
 * layout (fa_layout_name word), how it was decided (fa_layout_source_name word), the target's
 * default and the rival measured against it, the paired rounds and their verdict (1 rival
 * faster, 0 no measured gain, -1 slower), both whole-model medians and the paired median gain
 * with its sign-test interval (ns). Plans stored before keep NULL: their layout was the target's
 * default at the time and was not recorded (read as "unknown"). */
static const char *const migration_10_to_11 = "ALTER TABLE plans ADD COLUMN layout TEXT;\n"
                                               "ALTER TABLE plans ADD COLUMN layout_source TEXT;\n"
                                               "ALTER TABLE plans ADD COLUMN layout_default TEXT;\n"
                                               "ALTER TABLE plans ADD COLUMN layout_rival TEXT;\n"
                                               "ALTER TABLE plans ADD COLUMN layout_rounds INTEGER;\n"
                                               "ALTER TABLE plans ADD COLUMN layout_verdict INTEGER;\n"
                                               "ALTER TABLE plans ADD COLUMN layout_default_median_ns INTEGER;\n"
                                               "ALTER TABLE plans ADD COLUMN layout_rival_median_ns INTEGER;\n"
                                               "ALTER TABLE plans ADD COLUMN layout_gain_ns INTEGER;\n"
                                               "ALTER TABLE plans ADD COLUMN layout_gain_lo_ns INTEGER;\n"
                                               "ALTER TABLE plans ADD COLUMN layout_gain_hi_ns INTEGER;\n";

/* Version 12: each accepted cluster's saving as the whole model sees it (issue 36; plan/plan.h
 * fa_cluster_verdict inmodel_saving_ns): the replaced nodes' time in the baseline's trace less the
 * fused node's in the fused model's trace, medians over their iterations, and the spread quoted
 * with it (the two sides' IQRs in quadrature), µs. Clusters stored before read NULL: not measured. */
static const char *const migration_11_to_12 = "ALTER TABLE clusters ADD COLUMN inmodel_saving_us REAL;\n"
                                               "ALTER TABLE clusters ADD COLUMN inmodel_spread_us REAL;\n";

/* Version 13: the prediction's own interval (issue 36; plan/plan.h fa_cluster est_lo_ns,
 * est_hi_ns): the predicted saving at the two ends of its probe's ratio interval, µs, quoted as
 * "about 0" or "± X%" where it reaches 0 or lies beyond ±25 % of the prediction. Clusters stored
 * before read NULL: no interval known, one figure quoted as then. */
static const char *const migration_12_to_13 = "ALTER TABLE clusters ADD COLUMN est_lo_us REAL;\n"
                                               "ALTER TABLE clusters ADD COLUMN est_hi_us REAL;\n";

const char *const fa_store_migrations[FA_STORE_SCHEMA_VERSION] = {
    migration_0_to_1,
    migration_1_to_2,
    migration_2_to_3,
    migration_3_to_4,
    migration_4_to_5,
    migration_5_to_6,
    migration_6_to_7,
    migration_7_to_8,
    migration_8_to_9,
    migration_9_to_10,
    migration_10_to_11,
    migration_11_to_12,
    migration_12_to_13,
};

/* ---- the reference schema: what every database opened is compared with ---- */

void fa_store_quote_name(fa_buf *b, const char *s, size_t n)
{
    size_t shown = n > 64 ? 64 : n;
    fa_buf_puts(b, "'");
    for (size_t i = 0; i < shown; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') fa_buf_append(b, &c, 1);
        else fa_buf_printf(b, "\\x%02x", c);
    }
    fa_buf_puts(b, n > shown ? "'..." : "'");
}

fa_status fa_store_schema_reference(fa_ctx *ctx, int64_t version, sqlite3 **out)
{
    *out = NULL;
    if (version < 0 || version > FA_STORE_SCHEMA_VERSION)
        return fa_ctx_error(ctx, FA_ERR_INTERNAL, "no reference schema for version %lld", (long long)version);
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_MEMORY | SQLITE_OPEN_NOMUTEX, NULL);
    for (int64_t v = 0; rc == SQLITE_OK && v < version; v++) rc = sqlite3_exec(db, fa_store_migrations[v], NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        fa_status s = fa_ctx_error(ctx, (rc & 0xff) == SQLITE_NOMEM ? FA_ERR_NOMEM : FA_ERR_INTERNAL,
                                   "building the reference schema (version %lld): %s", (long long)version,
                                   db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close(db);
        return s;
    }
    *out = db;
    return FA_OK;
}

/* Rows of one query as text cells (NULL as "\x01NULL"), joined: "a|b|c\n" per row; malloc'd. */
static char *rows_text(sqlite3 *db, const char *sql, const char *arg, int *rc_out)
{
    sqlite3_stmt *q = NULL;
    fa_buf b;
    fa_buf_init(&b);
    int rc = sqlite3_prepare_v2(db, sql, -1, &q, NULL);
    if (rc == SQLITE_OK && arg) rc = sqlite3_bind_text(q, 1, arg, -1, SQLITE_STATIC);
    while (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        for (int i = 0; i < sqlite3_column_count(q); i++) {
            const char *t = (const char *)sqlite3_column_text(q, i);
            fa_buf_printf(&b, "%s%s", i ? "|" : "", t ? t : "\x01NULL");
        }
        fa_buf_puts(&b, "\n");
        rc = SQLITE_OK;
    }
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
    sqlite3_finalize(q);
    if (b.oom && rc == SQLITE_OK) rc = SQLITE_NOMEM;
    *rc_out = rc;
    if (rc != SQLITE_OK) {
        fa_buf_free(&b);
        return NULL;
    }
    return b.data ? b.data : strdup("");
}

/* The objects of a schema: "type|name|tbl_name" lines, sqlite_stat tables (ANALYZE) left out. */
static const char *const k_objects_sql =
    "SELECT type, name, tbl_name FROM sqlite_schema WHERE name NOT IN ('sqlite_stat1', 'sqlite_stat4') ORDER BY name";

/* What is compared per object (one text per object): a table's kind, WITHOUT ROWID and STRICT
 * flags, its columns (name, declared type, NOT NULL, default, primary-key position, hidden:
 * generated columns and virtual tables differ there) and foreign keys; an index's table, columns,
 * uniqueness and partial flag. */
static const char *const k_table_sql =
    "SELECT 'kind', type, wr, strict, ncol, NULL, NULL FROM pragma_table_list(?1) WHERE schema = 'main' "
    "UNION ALL SELECT 'column', name, type, \"notnull\", dflt_value, pk, hidden FROM pragma_table_xinfo(?1) "
    "UNION ALL SELECT 'foreign key', \"table\", \"from\", \"to\", on_update, on_delete, \"match\" "
    "FROM pragma_foreign_key_list(?1)";
static const char *const k_index_sql =
    "SELECT 'key', seqno, cid, name, \"desc\", coll, \"key\" FROM pragma_index_xinfo(?1) "
    "UNION ALL SELECT 'flags', \"unique\", origin, partial, NULL, NULL, NULL FROM pragma_index_list((SELECT tbl_name "
    "FROM sqlite_schema WHERE name = ?1)) WHERE name = ?1";

/* Field k ("|"-separated) of one line. */
static void field(const char *line, size_t len, int k, const char **f, size_t *n)
{
    const char *p = line, *end = line + len;
    for (int i = 0; i < k && p < end; i++) {
        const char *bar = memchr(p, '|', (size_t)(end - p));
        p = bar ? bar + 1 : end;
    }
    const char *bar = memchr(p, '|', (size_t)(end - p));
    *f = p;
    *n = (size_t)((bar ? bar : end) - p);
}

/* Whether field 0 of a line is `kind` (NULL: any). */
static bool of_kind(const char *line, size_t len, const char *kind)
{
    if (!kind) return true;
    const char *f;
    size_t n;
    field(line, len, 0, &f, &n);
    return n == strlen(kind) && !memcmp(f, kind, n);
}

/* The first line of text a (lines "field|field|...") of `kind` (NULL: any) that b lacks. */
static const char *first_extra(const char *a, const char *b, const char *kind, size_t *len)
{
    for (const char *p = a; *p;) {
        size_t n = strcspn(p, "\n");
        bool found = !of_kind(p, n, kind);
        for (const char *r = b; *r && !found;) {
            size_t m = strcspn(r, "\n");
            found = m == n && !memcmp(p, r, n);
            r += m + (r[m] == '\n');
        }
        if (!found) {
            *len = n;
            return p;
        }
        p += n + (p[n] == '\n');
    }
    return NULL;
}

/* Whether text has a "column|NAME|..." line. */
static bool has_column_line(const char *text, const char *name, size_t nn)
{
    for (const char *r = text; *r;) {
        size_t m = strcspn(r, "\n"), fn;
        const char *f;
        if (of_kind(r, m, "column")) {
            field(r, m, 1, &f, &fn);
            if (fn == nn && !memcmp(f, name, nn)) return true;
        }
        r += m + (r[m] == '\n');
    }
    return false;
}

/* The first column line of a whose column name b has no line for; its name in *c, *cn. */
static const char *first_unnamed(const char *a, const char *b, const char **c, size_t *cn)
{
    for (const char *p = a; *p;) {
        size_t n = strcspn(p, "\n");
        if (of_kind(p, n, "column")) {
            field(p, n, 1, c, cn);
            if (!has_column_line(b, *c, *cn)) return p;
        }
        p += n + (p[n] == '\n');
    }
    return NULL;
}

/* "PATH: WHAT in fuse-advise's schema version V ..." on ctx. */
static fa_status schema_diff(fa_ctx *ctx, const char *path, int64_t version, const char *what)
{
    return fa_ctx_error(ctx, FA_ERR_INPUT,
                        "%s: %s in fuse-advise's schema version %lld: not a run database this fuse-advise "
                        "wrote (damaged, or crafted); refusing to read it",
                        path, what, (long long)version);
}

/* One object's description differs: the first difference as a sentence, columns first. */
static fa_status object_diff(fa_ctx *ctx, const char *path, int64_t version, const char *type, const char *name,
                             const char *file_desc, const char *ref_desc)
{
    fa_buf m;
    fa_buf_init(&m);
    size_t n = 0, cn;
    const char *line, *c;
    fa_buf_printf(&m, "%s ", type);
    fa_store_quote_name(&m, name, strlen(name));
    if ((line = first_unnamed(file_desc, ref_desc, &c, &cn))) {
        fa_buf_puts(&m, " has a column ");
        fa_store_quote_name(&m, c, cn);
        fa_buf_puts(&m, " that is not");
    } else if ((line = first_unnamed(ref_desc, file_desc, &c, &cn))) {
        fa_buf_puts(&m, " lacks column ");
        fa_store_quote_name(&m, c, cn);
        fa_buf_puts(&m, " of the table");
    } else if ((line = first_extra(file_desc, ref_desc, "column", &n))) {
        field(line, n, 1, &c, &cn);
        fa_buf_puts(&m, ", column ");
        fa_store_quote_name(&m, c, cn);
        fa_buf_puts(&m, " (its type, NOT NULL, default, key or generation) is declared otherwise than");
    } else if (first_extra(file_desc, ref_desc, "kind", &n) || first_extra(ref_desc, file_desc, "kind", &n)) {
        fa_buf_puts(&m, " is not the plain table (WITHOUT ROWID or not, STRICT or not) it is");
    } else if (first_extra(file_desc, ref_desc, "foreign key", &n) || first_extra(ref_desc, file_desc, "foreign key", &n)) {
        fa_buf_puts(&m, " has other foreign keys than");
    } else if (first_extra(file_desc, ref_desc, NULL, &n) || first_extra(ref_desc, file_desc, NULL, &n)) {
        fa_buf_puts(&m, " is on other columns or flags than");
    } else {
        fa_buf_puts(&m, " has its columns in another order than");
    }
    fa_status s = m.oom ? fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", path)
                        : schema_diff(ctx, path, version, m.data);
    fa_buf_free(&m);
    return s;
}

fa_status fa_store_schema_check_sqlite(fa_ctx *ctx, const char *path, sqlite3 *db, int64_t version)
{
    sqlite3 *ref = NULL;
    fa_status s = fa_store_schema_reference(ctx, version, &ref);
    if (s) return s;
    int rc = SQLITE_OK, rc2 = SQLITE_OK;
    char *mine = rows_text(db, k_objects_sql, NULL, &rc), *want = rows_text(ref, k_objects_sql, NULL, &rc2);
    if (rc2 != SQLITE_OK) s = fa_ctx_error(ctx, FA_ERR_INTERNAL, "reading the reference schema: %s", sqlite3_errstr(rc2));
    else if (rc != SQLITE_OK)
        s = fa_ctx_error(ctx, (rc & 0xff) == SQLITE_NOMEM ? FA_ERR_NOMEM : FA_ERR_INPUT, "%s: reading its schema: %s", path,
                         sqlite3_errmsg(db));
    size_t n = 0;
    const char *extra;
    /* every object of the file is one of the reference's, of the same type on the same table */
    if (!s && (extra = first_extra(mine, want, NULL, &n))) {
        const char *t, *nm;
        size_t tn, nn;
        field(extra, n, 0, &t, &tn);
        field(extra, n, 1, &nm, &nn);
        fa_buf m;
        fa_buf_init(&m);
        fa_buf_append(&m, t, tn);
        fa_buf_puts(&m, " ");
        fa_store_quote_name(&m, nm, nn);
        fa_buf_puts(&m, " (or one of that name of this type on this table) is not");
        s = m.oom ? fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", path) : schema_diff(ctx, path, version, m.data);
        fa_buf_free(&m);
    }
    if (!s && (extra = first_extra(want, mine, NULL, &n))) {
        const char *t, *nm;
        size_t tn, nn;
        field(extra, n, 0, &t, &tn);
        field(extra, n, 1, &nm, &nn);
        char what[160];
        snprintf(what, sizeof what, "the database lacks %.*s '%.*s', which is", (int)tn, t, (int)nn, nm);
        s = schema_diff(ctx, path, version, what);
    }
    /* each table's and index's description */
    for (const char *p = want; !s && p && *p;) {
        size_t len = strcspn(p, "\n");
        const char *t, *nm;
        size_t tn, nn;
        field(p, len, 0, &t, &tn);
        field(p, len, 1, &nm, &nn);
        char type[16], name[128];
        snprintf(type, sizeof type, "%.*s", (int)tn, t);
        snprintf(name, sizeof name, "%.*s", (int)nn, nm);
        const char *sql = !strcmp(type, "table") ? k_table_sql : !strcmp(type, "index") ? k_index_sql : NULL;
        if (sql) {
            char *a = rows_text(db, sql, name, &rc), *b = rows_text(ref, sql, name, &rc2);
            if (rc2 != SQLITE_OK)
                s = fa_ctx_error(ctx, FA_ERR_INTERNAL, "reading the reference schema: %s", sqlite3_errstr(rc2));
            else if (rc != SQLITE_OK)
                s = fa_ctx_error(ctx, (rc & 0xff) == SQLITE_NOMEM ? FA_ERR_NOMEM : FA_ERR_INPUT,
                                 "%s: reading the schema of %s %s: %s", path, type, name, sqlite3_errmsg(db));
            else if (strcmp(a, b))
                s = object_diff(ctx, path, version, type, name, a, b);
            free(a);
            free(b);
        }
        p += len + (p[len] == '\n');
    }
    free(mine);
    free(want);
    sqlite3_close(ref);
    return s;
}

fa_status fa_store_schema_columns(fa_ctx *ctx, sqlite3 *ref, const char *table, char ***names, int *n)
{
    *names = NULL;
    *n = 0;
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(ref, "SELECT name FROM pragma_table_info(?1) ORDER BY cid", -1, &q, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(q, 1, table, -1, SQLITE_STATIC);
    char **v = NULL;
    int k = 0;
    fa_status s = FA_OK;
    while (!s && rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *c = (const char *)sqlite3_column_text(q, 0);
        /* our own migrations' names: plain identifiers, or a programming error */
        if (!c || !*c || strspn(c, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(c)) {
            s = fa_ctx_error(ctx, FA_ERR_INTERNAL, "schema table %s has a column name that is not a plain identifier", table);
            break;
        }
        char **p = realloc(v, (size_t)(k + 1) * sizeof *p);
        if (!p || !(p[k] = strdup(c))) {
            if (p) v = p;
            s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
            break;
        }
        v = p;
        k++;
        rc = SQLITE_OK;
    }
    if (!s && rc != SQLITE_DONE) s = fa_ctx_error(ctx, FA_ERR_INTERNAL, "reading the reference schema: %s", sqlite3_errstr(rc));
    if (!s && k == 0) s = fa_ctx_error(ctx, FA_ERR_INTERNAL, "the schema has no table %s", table);
    sqlite3_finalize(q);
    if (s) {
        for (int i = 0; i < k; i++) free(v[i]);
        free(v);
        return s;
    }
    *names = v;
    *n = k;
    return FA_OK;
}
