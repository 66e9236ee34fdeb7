/* tests/unit/onnx_testutil — helpers for the ONNX/TensorProto tests: corpus file lists and
 * a tiny builder that writes ModelProto bytes with protobuf-c (so bad inputs are crafted in
 * the test, never stored). Header-only; every function is static. */
#ifndef FA_ONNX_TESTUTIL_H
#define FA_ONNX_TESTUTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "graph/graph.h"
#include "graph/onnx-subset.pb-c.h"
#include "testutil.h"

/* ---- file lists ---- */
typedef struct ot_list {
    char **v;
    int n, cap;
} ot_list;

static inline void ot_list_push(ot_list *l, const char *s)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->v = realloc(l->v, sizeof(char *) * (size_t)l->cap);
        assert_non_null(l->v);
    }
    l->v[l->n++] = strdup(s);
}

static inline void ot_list_free(ot_list *l)
{
    for (int i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

static inline int ot_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static inline int ot_ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static inline void ot_walk(const char *dir, const char *suffix, ot_list *out)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(p, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) ot_walk(p, suffix, out);
        else if (S_ISREG(st.st_mode) && ot_ends_with(p, suffix)) ot_list_push(out, p);
    }
    closedir(d);
}

/* Sorted list of files under corpus/onnx ending in suffix (".onnx", ".pb"). */
static inline ot_list ot_corpus_files(const char *suffix)
{
    ot_list l = {0};
    char root[4096];
    snprintf(root, sizeof root, "%s/onnx", fa_test_corpus());
    ot_walk(root, suffix, &l);
    if (l.n) qsort(l.v, (size_t)l.n, sizeof(char *), ot_cmp);
    return l;
}

/* Corpus folder of a path: "light", "node", "pytorch-converted", ... (static buffer). */
static inline const char *ot_folder(const char *path)
{
    static char buf[256];
    const char *p = strstr(path, "/onnx/");
    if (!p) return "?";
    p += 6;
    size_t n = strcspn(p, "/");
    snprintf(buf, sizeof buf, "%.*s", (int)n, p);
    return buf;
}

static inline uint8_t *ot_slurp(const char *path, size_t *len)
{
    fa_ctx *ctx = fa_ctx_create();
    uint8_t *b = NULL;
    assert_int_equal(fa_read_file(ctx, path, &b, len), FA_OK);
    fa_ctx_free(ctx);
    return b;
}

/* ---- a small ModelProto builder (fixed capacity, static storage per builder) ---- */
#define OT_MAX 16
typedef struct ot_model {
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__OperatorSetIdProto opset;
    Onnx__OperatorSetIdProto *opsets[1];
    Onnx__NodeProto nodes[OT_MAX];
    Onnx__NodeProto *node_ptrs[OT_MAX];
    char *node_io[OT_MAX][2][4];
    Onnx__AttributeProto attrs[OT_MAX];
    Onnx__AttributeProto *attr_ptrs[OT_MAX];
    Onnx__TensorProto inits[OT_MAX];
    Onnx__TensorProto *init_ptrs[OT_MAX];
    Onnx__ValueInfoProto vis[OT_MAX];
    Onnx__ValueInfoProto *in_ptrs[OT_MAX], *out_ptrs[OT_MAX];
    Onnx__TypeProto types[OT_MAX];
    Onnx__TypeProto__Tensor tts[OT_MAX];
    Onnx__TensorShapeProto shapes[OT_MAX];
    Onnx__TensorShapeProto__Dimension dims[OT_MAX][FA_MAX_RANK + 2];
    Onnx__TensorShapeProto__Dimension *dim_ptrs[OT_MAX][FA_MAX_RANK + 2];
    int n_vis;
} ot_model;

static inline void ot_model_init(ot_model *b, int64_t opset)
{
    memset(b, 0, sizeof *b);
    onnx__model_proto__init(&b->m);
    onnx__graph_proto__init(&b->g);
    onnx__operator_set_id_proto__init(&b->opset);
    b->m.has_ir_version = 1;
    b->m.ir_version = 8;
    b->m.graph = &b->g;
    b->g.name = "t";
    b->opset.has_version = 1;
    b->opset.version = opset;
    b->opset.domain = "";
    b->opsets[0] = &b->opset;
    b->m.n_opset_import = 1;
    b->m.opset_import = b->opsets;
    b->g.node = b->node_ptrs;
    b->g.initializer = b->init_ptrs;
    b->g.input = b->in_ptrs;
    b->g.output = b->out_ptrs;
}

/* Add a node with up to 4 inputs/outputs (names are borrowed). */
static inline Onnx__NodeProto *ot_node(ot_model *b, const char *name, const char *op, int n_in,
                                const char *const *in, int n_out, const char *const *out)
{
    int k = (int)b->g.n_node++;
    Onnx__NodeProto *n = &b->nodes[k];
    onnx__node_proto__init(n);
    n->name = (char *)name;
    n->op_type = (char *)op;
    for (int i = 0; i < n_in; i++) b->node_io[k][0][i] = (char *)in[i];
    for (int i = 0; i < n_out; i++) b->node_io[k][1][i] = (char *)out[i];
    n->n_input = (size_t)n_in;
    n->input = b->node_io[k][0];
    n->n_output = (size_t)n_out;
    n->output = b->node_io[k][1];
    b->node_ptrs[k] = n;
    return n;
}

/* Attach one attribute (storage from the builder's pool) to node n; returns it to fill. */
static inline Onnx__AttributeProto *ot_attr(ot_model *b, Onnx__NodeProto *n, const char *name,
                                     Onnx__AttributeProto__AttributeType type)
{
    int k = 0;
    while (b->attrs[k].name) k++;
    Onnx__AttributeProto *a = &b->attrs[k];
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    a->type = type;
    if (!n->attribute) n->attribute = &b->attr_ptrs[k];
    b->attr_ptrs[k] = a;
    n->n_attribute++;
    return a;
}

/* A float value_info with the given dims (dim < 0: dim_param "N"). */
static inline Onnx__ValueInfoProto *ot_vi(ot_model *b, const char *name, int32_t elem, int rank,
                                   const int64_t *dims)
{
    int k = b->n_vis++;
    Onnx__ValueInfoProto *vi = &b->vis[k];
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(&b->types[k]);
    onnx__type_proto__tensor__init(&b->tts[k]);
    onnx__tensor_shape_proto__init(&b->shapes[k]);
    vi->name = (char *)name;
    vi->type = &b->types[k];
    b->types[k].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    b->types[k].tensor_type = &b->tts[k];
    b->tts[k].has_elem_type = 1;
    b->tts[k].elem_type = elem;
    if (rank >= 0) {
        b->tts[k].shape = &b->shapes[k];
        b->shapes[k].n_dim = (size_t)rank;
        b->shapes[k].dim = b->dim_ptrs[k];
        for (int i = 0; i < rank; i++) {
            Onnx__TensorShapeProto__Dimension *d = &b->dims[k][i];
            onnx__tensor_shape_proto__dimension__init(d);
            if (dims[i] >= 0 || dims[i] < -1) {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                d->dim_value = dims[i];
            } else {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                d->dim_param = "N";
            }
            b->dim_ptrs[k][i] = d;
        }
    }
    return vi;
}

static inline void ot_input(ot_model *b, const char *name, int rank, const int64_t *dims)
{
    b->in_ptrs[b->g.n_input++] = ot_vi(b, name, 1, rank, dims);
}

static inline void ot_output(ot_model *b, const char *name)
{
    b->out_ptrs[b->g.n_output++] = ot_vi(b, name, 1, -1, NULL);
}

/* Initializer with raw data (borrowed). */
static inline Onnx__TensorProto *ot_init_raw(ot_model *b, const char *name, int32_t dt, int rank,
                                      int64_t *dims, const void *raw, size_t nbytes)
{
    int k = (int)b->g.n_initializer++;
    Onnx__TensorProto *t = &b->inits[k];
    onnx__tensor_proto__init(t);
    t->name = (char *)name;
    t->has_data_type = 1;
    t->data_type = dt;
    t->n_dims = (size_t)rank;
    t->dims = dims;
    if (raw) {
        t->has_raw_data = 1;
        t->raw_data.data = (uint8_t *)raw;
        t->raw_data.len = nbytes;
    }
    b->init_ptrs[k] = t;
    return t;
}

/* Serialize (malloc'd). */
static inline uint8_t *ot_pack(ot_model *b, size_t *len)
{
    *len = onnx__model_proto__get_packed_size(&b->m);
    uint8_t *buf = malloc(*len ? *len : 1);
    assert_non_null(buf);
    onnx__model_proto__pack(&b->m, buf);
    return buf;
}

/* A valid model: X[1,4] -> Relu -> Y, plus Add with initializer W[4] -> Z. */
static inline void ot_model_small(ot_model *b)
{
    static float w[4] = {1, 2, 3, 4};
    static int64_t wd[1] = {4};
    static const int64_t xd[2] = {1, 4};
    ot_model_init(b, 13);
    ot_input(b, "X", 2, xd);
    ot_init_raw(b, "W", 1, 1, wd, w, sizeof w);
    const char *r_in[] = {"X"}, *r_out[] = {"R"};
    ot_node(b, "relu", "Relu", 1, r_in, 1, r_out);
    const char *a_in[] = {"R", "W"}, *a_out[] = {"Y"};
    ot_node(b, "add", "Add", 2, a_in, 1, a_out);
    ot_output(b, "Y");
}

#endif
