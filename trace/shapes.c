/* trace/shapes — the launching cpu op's inputs ("TYPE:DIMS;...", parsed once per distinct text)
 * and the bytes and FLOPs a kernel or a fused group moves, estimated from them. */
#include "trace/trace-impl.h"

static uint8_t dtype_size_name(const char *s, size_t n, uint8_t *kind)
{
    static const struct { const char *name; uint8_t size, kind; } tab[] = {
        {"float", 4, DT_FLOAT}, {"double", 8, DT_FLOAT}, {"c10::Half", 2, DT_FLOAT}, {"c10::BFloat16", 2, DT_FLOAT},
        {"long int", 8, DT_INT}, {"long", 8, DT_INT}, {"int64_t", 8, DT_INT}, {"int", 4, DT_INT}, {"short int", 2, DT_INT},
        {"short", 2, DT_INT}, {"signed char", 1, DT_INT}, {"unsigned char", 1, DT_INT}, {"bool", 1, DT_BOOL},
        {"c10::complex<float>", 8, DT_COMPLEX}, {"c10::complex<double>", 16, DT_COMPLEX},
        {"c10::Float8_e4m3fn", 1, DT_FLOAT}, {"c10::Float8_e5m2", 1, DT_FLOAT}, {"c10::Float8_e4m3fnuz", 1, DT_FLOAT},
        {"c10::Float8_e5m2fnuz", 1, DT_FLOAT}, {"unsigned int", 4, DT_INT}, {"float32", 4, DT_FLOAT},
        {"float16", 2, DT_FLOAT}, {"bfloat16", 2, DT_FLOAT}, {"int32", 4, DT_INT}, {"int8", 1, DT_INT},
        {"uint8", 1, DT_INT}};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (strlen(tab[i].name) == n && !strncmp(tab[i].name, s, n)) {
            *kind = tab[i].kind;
            return tab[i].size;
        }
    *kind = DT_UNKNOWN;
    return 0;
}

/* do strides st[0..n) lay dims d[0..n) out as a contiguous tensor (size-1 dims ignored)? */
static bool strides_contiguous(const int64_t *d, const int64_t *st, int n)
{
    int64_t want = 1;
    for (int k = n - 1; k >= 0; k--) {
        if (d[k] == 1) continue;
        if (st[k] != want) return false;
        want *= d[k];
    }
    return true;
}

void fa__ta_shape_parse(const char *text, shape_info *si)
{
    memset(si->in, 0, sizeof si->in);
    si->n = 0;
    const char *p = text;
    while (*p && si->n < SH_MAX_IN) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *colon = NULL; /* the last ':' (type names hold "::") */
        for (const char *q = p; q < p + len; q++)
            if (*q == ':') colon = q;
        sh_in *in = &si->in[si->n++];
        in->contiguous = -1;
        if (colon) {
            size_t tl = (size_t)(colon - p);
            in->dsize = dtype_size_name(p, tl, &in->kind);
            const char *d = colon + 1, *de = p + len;
            const char *at = memchr(d, '@', (size_t)(de - d)); /* the strides follow */
            const char *dend = at ? at : de;
            if (d < de && *d == 'L') {
                in->list = in->tensor = true;
                in->numel = strtod(d + 1, NULL);
            } else if (d < de && *d == '?') {
                in->tensor = false;
            } else if (in->dsize) { /* a tensor: a known element type (not Scalar, ScalarList, "", ...) */
                in->tensor = true;
                in->numel = 1;
                int nd = 0;
                while (d < dend) {
                    char *q;
                    long long v = strtoll(d, &q, 10);
                    if (q == d || v < 0) {
                        in->tensor = false;
                        break;
                    }
                    if (nd < SH_MAX_DIMS) in->dims[nd] = v;
                    nd++;
                    in->numel *= (double)v;
                    d = q;
                    if (d < dend && *d == 'x') d++;
                }
                in->ndim = (uint8_t)(nd > SH_MAX_DIMS ? SH_MAX_DIMS : nd);
                if (at && in->tensor && nd <= SH_MAX_DIMS) {
                    int64_t st[SH_MAX_DIMS];
                    int ns = 0;
                    for (const char *q = at + 1; q < de && ns < SH_MAX_DIMS;) {
                        char *r;
                        long long v = strtoll(q, &r, 10);
                        if (r == q) break;
                        st[ns++] = v;
                        q = r;
                        if (q < de && *q == 'x') q++;
                    }
                    if (ns == nd) in->contiguous = strides_contiguous(in->dims, st, nd) ? 1 : 0;
                }
            }
        }
        if (!end) break;
        p = end + 1;
    }
}

const char *fa__ta_shape_dims_text(const char *text, char *out, size_t cap)
{
    size_t o = 0;
    bool skip = false;
    for (const char *p = text; *p && o + 1 < cap; p++) {
        if (*p == '@') skip = true;
        else if (*p == ';') skip = false;
        if (!skip) out[o++] = *p;
    }
    out[o] = 0;
    return out;
}

/* Bytes and FLOPs one kernel moves / does, from its op key and the op's inputs. read/write < 0
 * when unknown; *why says what is missing. Output sizes (Kineto records none): elementwise ops
 * write the broadcast of their inputs (the largest input) in the widest input type; reductions
 * (mean, sum, amax, var) reduce the last dimension; copy_(dst, src) reads src and writes dst;
 * fill_(self, value) / zero_(self) write self and read only a tensor value (a factory function
 * zeros / full / new_zeros launches its kernel under them); softmax / norms / unary ops keep the
 * input's shape. FLOPs: 1 per output element for
 * elementwise ops, 1 per input element for reductions, 5 per element for softmax, 8 for norms;
 * GEMM 2*M*N*K; attention 4*B*H*L*S*D (QK^T and PV). */
void fa__ta_kernel_bytes(const shape_info *si, int key, bool inplace, kbytes *kb)
{
    kb->read = kb->write = kb->flops = -1;
    kb->out_numel = -1;
    kb->out_dsize = 0;
    kb->out_kind = DT_UNKNOWN;
    kb->why = NULL;
    if (!si) {
        kb->why = "no Input Dims on its cpu op (record_shapes off), or the op launched several kernels";
        return;
    }
    int t[SH_MAX_IN], nt = 0;
    for (int i = 0; i < si->n; i++)
        if (si->in[i].tensor) t[nt++] = i;
    if (!nt) {
        kb->why = "its cpu op has no tensor input with known dims";
        return;
    }
    const sh_in *x = &si->in[t[0]];
    kb->out_kind = x->kind; /* the first tensor's, unless the op's case below says otherwise */
    double rd = 0;
    bool dsz_ok = true;
    for (int k = 0; k < nt; k++) {
        const sh_in *in = &si->in[t[k]];
        if (!in->dsize) dsz_ok = false;
        rd += in->numel * in->dsize;
    }
    switch (key) {
    case FA_TA_KEY_GEMM: {
        /* the two matrices: the last two tensor inputs (addmm: bias, A, B; linear: x, W, bias) */
        const sh_in *a = NULL, *b = NULL;
        if (nt >= 2 && si->in[t[nt - 1]].ndim >= 2 && si->in[t[nt - 2]].ndim >= 2) {
            a = &si->in[t[nt - 2]];
            b = &si->in[t[nt - 1]];
        } else if (nt >= 2 && si->in[t[0]].ndim >= 2 && si->in[t[1]].ndim >= 2) {
            a = &si->in[t[0]];
            b = &si->in[t[1]];
        }
        if (!a || !dsz_ok) {
            kb->why = "GEMM operands without 2-d shapes";
            return;
        }
        double K = (double)a->dims[a->ndim - 1];
        double M = a->numel / (K > 0 ? K : 1);
        /* B is [..., K, N] (mm, bmm, matmul) or [N, K] (linear's weight) */
        double N = b->ndim >= 2 && (double)b->dims[b->ndim - 2] == K ? (double)b->dims[b->ndim - 1] : (double)b->dims[0];
        kb->flops = 2.0 * M * N * K;
        kb->out_numel = M * N;
        kb->out_dsize = a->dsize;
        kb->read = rd;
        kb->write = kb->out_numel * kb->out_dsize;
        return;
    }
    case FA_TA_KEY_ATTENTION: {
        if (nt < 3 || si->in[t[0]].ndim != 4 || si->in[t[1]].ndim != 4 || !dsz_ok) {
            kb->why = "attention inputs without [B, H, L, D] shapes";
            return;
        }
        const sh_in *q = &si->in[t[0]], *kk = &si->in[t[1]];
        double B = (double)q->dims[0], H = (double)q->dims[1], L = (double)q->dims[2], D = (double)q->dims[3];
        double S = (double)kk->dims[2];
        kb->flops = 4.0 * B * H * L * S * D;
        kb->out_numel = q->numel;
        kb->out_dsize = q->dsize;
        kb->read = si->in[t[0]].numel * q->dsize + si->in[t[1]].numel * kk->dsize +
                   (nt > 2 ? si->in[t[2]].numel * si->in[t[2]].dsize : 0);
        kb->write = kb->out_numel * kb->out_dsize;
        return;
    }
    case FA_TA_KEY_CONV:
        kb->why = "convolution output size needs stride and padding, which the trace does not record";
        return;
    case FA_TA_KEY_OTHER:
    case FA_TA_KEY_INDEX:
    case FA_TA_KEY_EMBEDDING:
        kb->why = "op kind not modelled (its output size is not a function of the input shapes)";
        return;
    case FA_TA_KEY_GATED_ACT: /* the output is half the input's last dimension, and vLLM / sglang pass
                                 it as an argument: the broadcast rule would price it wrong */
        kb->why = "gated activation not modelled (its output is half its input, passed as an argument)";
        return;
    default: break;
    }
    if (!dsz_ok && key != FA_TA_KEY_CAT) {
        kb->why = "an input's dtype is unknown";
        return;
    }
    switch (key) {
    case FA_TA_KEY_FILL:
        if (!inplace) { /* a fill launched by an op that is not fill_ / zero_: its size is unknown */
            kb->why = "a fill's output size is its op's size argument, not an input's";
            return;
        }
        /* the destination is written, never read; fill_(self, Tensor value) reads the value */
        kb->read = rd - x->numel * x->dsize;
        kb->out_numel = x->numel;
        kb->out_dsize = x->dsize;
        kb->flops = 0;
        break;
    case FA_TA_KEY_COPY:
        if (nt >= 2) { /* copy_(dst, src) */
            kb->read = si->in[t[1]].numel * si->in[t[1]].dsize;
            kb->out_numel = x->numel;
            kb->out_dsize = x->dsize;
        } else {
            kb->read = rd;
            kb->out_numel = x->numel;
            kb->out_dsize = x->dsize;
        }
        kb->flops = 0;
        break;
    case FA_TA_KEY_CAT: {
        double n = 0;
        uint8_t ds = 0;
        for (int k = 0; k < nt; k++) {
            n += si->in[t[k]].numel;
            if (si->in[t[k]].dsize) ds = si->in[t[k]].dsize, kb->out_kind = si->in[t[k]].kind;
        }
        if (!ds) {
            kb->why = "a TensorList's dtype is not recorded";
            kb->out_numel = n;
            return;
        }
        kb->read = n * ds;
        kb->out_numel = n;
        kb->out_dsize = ds;
        kb->flops = 0;
        break;
    }
    case FA_TA_KEY_MEAN:
    case FA_TA_KEY_SUM:
    case FA_TA_KEY_AMAX:
    case FA_TA_KEY_VAR: {
        double last = x->ndim ? (double)x->dims[x->ndim - 1] : 1;
        kb->read = x->numel * x->dsize;
        kb->out_numel = last > 0 ? x->numel / last : x->numel;
        kb->out_dsize = x->dsize;
        kb->flops = x->numel;
        break;
    }
    case FA_TA_KEY_SOFTMAX:
    case FA_TA_KEY_LAYER_NORM:
    case FA_TA_KEY_RMS_NORM:
        kb->read = rd;
        kb->out_numel = x->numel;
        kb->out_dsize = x->dsize;
        kb->flops = (key == FA_TA_KEY_SOFTMAX ? 5.0 : 8.0) * x->numel;
        break;
    default: { /* elementwise: the broadcast of the inputs, in their promoted type */
        double n = 0;
        for (int k = 0; k < nt; k++)
            if (si->in[t[k]].numel > n) n = si->in[t[k]].numel;
        /* PyTorch's type promotion: the dimensioned tensors decide; a 0-d tensor or a Python
         * scalar (Input type "double" with no dims) only when it is of a higher kind (an int
         * tensor times 0.5 is float32), never by its width (bf16 * 0.125 stays bf16) */
        uint8_t kind = 0, ds = 0, zkind = 0, zds = 0;
        for (int k = 0; k < nt; k++) {
            const sh_in *in = &si->in[t[k]];
            bool zero_d = !in->list && in->ndim == 0;
            if (zero_d) {
                if (in->kind > zkind || (in->kind == zkind && in->dsize > zds)) zkind = in->kind, zds = in->dsize;
            } else if (in->kind > kind || (in->kind == kind && in->dsize > ds)) {
                kind = in->kind;
                ds = in->dsize;
            }
        }
        if (!ds) ds = zds, kind = zkind; /* only 0-d inputs: they decide among themselves */
        else if (zkind > kind) ds = zkind == DT_FLOAT ? 4 : zkind == DT_COMPLEX ? 8 : zds, kind = zkind; /* the default dtype */
        if (inplace) {
            n = x->numel;
            ds = x->dsize;
            kind = x->kind;
        }
        kb->out_kind = kind;
        kb->read = rd;
        kb->out_numel = n;
        kb->out_dsize = ds;
        kb->flops = n;
        break;
    }
    }
    kb->write = kb->out_numel * kb->out_dsize;
}

/* the inputs a kernel reads (copy_(dst, src) reads src only; fill_(self, value) and zero_(self)
 * never read self) */
static int read_inputs(const shape_info *si, int key, const sh_in **out)
{
    int n = 0, nt = 0;
    bool first = true;
    for (int i = 0; i < si->n; i++) {
        if (!si->in[i].tensor) continue;
        if (key == FA_TA_KEY_FILL && first) {
            first = false;
            continue; /* the destination */
        }
        if (key == FA_TA_KEY_COPY && nt++ == 0 && si->n > 1) {
            bool more = false;
            for (int k = i + 1; k < si->n; k++) more |= si->in[k].tensor;
            if (more) continue; /* the destination */
        }
        out[n++] = &si->in[i];
    }
    return n;
}

/* input `in` of a later member is the tensor that a member with outputs kb wrote: the same element
 * count and type (the trace names no tensors: sizes are the evidence) */
static bool is_output(const sh_in *in, const kbytes *kb)
{
    /* an input read through a transposed / sliced / expanded view (its recorded strides are not a
     * contiguous tensor's): the trace cannot tell whose storage it views, and an op's fresh output
     * is contiguous, so it is not taken for an earlier member's output (two .contiguous() copies of
     * one shape do not feed each other) */
    if (in->contiguous == 0) return false;
    /* an integer output is not a floating input of the same width (a step counter's long int add
     * beside a double): the element kind decides where both are known */
    if (in->kind != DT_UNKNOWN && kb->out_kind != DT_UNKNOWN && in->kind != kb->out_kind) return false;
    return in->numel == kb->out_numel && (!in->dsize || in->dsize == kb->out_dsize);
}

/* kb[j] of each member, false when a member's sizes are unknown */
static bool members_bytes(const ta_member *m, int n, kbytes *kb)
{
    for (int j = 0; j < n; j++) {
        fa__ta_kernel_bytes(m[j].si, m[j].key, m[j].inplace, &kb[j]);
        if (kb[j].read < 0 && m[j].key == FA_TA_KEY_CAT && kb[j].out_numel >= 0 && j > 0 && kb[j - 1].out_dsize) {
            /* a TensorList's dtype is not recorded: the tensors come from the member before */
            kb[j].out_dsize = kb[j - 1].out_dsize;
            kb[j].read = kb[j].write = kb[j].out_numel * kb[j].out_dsize;
        }
        if (kb[j].read < 0 || kb[j].write < 0) return false;
    }
    return true;
}

bool fa__ta_reads_output(const ta_member *earlier, int n, const ta_member *r)
{
    kbytes kb[FA_TA_MAX_SEQ + 1];
    if (n > FA_TA_MAX_SEQ) n = FA_TA_MAX_SEQ;
    if (!members_bytes(r, 1, &kb[n])) return true;
    const sh_in *in[SH_MAX_IN];
    int ni = read_inputs(r->si, r->key, in);
    /* a kernel that reads no tensor (a fill's value is a scalar: the ones_like seeding a
     * backward pass) reads nothing an earlier member wrote, whatever their sizes */
    if (ni == 0) return false;
    if (!members_bytes(earlier, n, kb)) return true;
    for (int k = 0; k < ni; k++)
        for (int p = 0; p < n; p++)
            if (is_output(in[k], &kb[p]) || (in[k]->list && kb[p].out_numel > 0 && kb[p].out_numel <= in[k]->numel))
                return true;
    return false;
}

double fa__ta_member_bound(const ta_member *m, int n, bool keep_first, const int64_t *dur_ns)
{
    kbytes kb[FA_TA_MAX_SEQ];
    if (n > FA_TA_MAX_SEQ) n = FA_TA_MAX_SEQ;
    if (!members_bytes(m, n, kb)) return -1;
    bool read_later[FA_TA_MAX_SEQ] = {false};
    double ext_read[FA_TA_MAX_SEQ];
    for (int j = 0; j < n; j++) {
        ext_read[j] = kb[j].read;
        if (j == 0) continue;
        const sh_in *in[SH_MAX_IN];
        int ni = read_inputs(m[j].si, m[j].key, in);
        bool used[FA_TA_MAX_SEQ] = {false};
        for (int k = 0; k < ni; k++) {
            if (in[k]->list) continue; /* a TensorList's parts: counted as read (a bound errs long) */
            for (int p = j - 1; p >= 0; p--)
                if (!used[p] && is_output(in[k], &kb[p])) {
                    used[p] = read_later[p] = true;
                    ext_read[j] -= in[k]->numel * (in[k]->dsize ? in[k]->dsize : kb[p].out_dsize);
                    break;
                }
        }
        if (ext_read[j] < 0) ext_read[j] = 0;
    }
    double bound = 0;
    for (int j = 0; j < n; j++) {
        double bytes = kb[j].read + kb[j].write;
        if (!(bytes > 0) || dur_ns[j] <= 0) continue;
        double keep = ext_read[j] + ((j == n - 1 || !read_later[j] || (keep_first && j == 0)) ? kb[j].write : 0);
        double t = (double)dur_ns[j] * keep / bytes;
        if (t > bound) bound = t;
    }
    return bound;
}

bool fa__ta_group_bytes(const ta_member *m, int n, bool keep_first, bool same_x, double *rd, double *wr, double *saved)
{
    kbytes kb[FA_TA_MAX_SEQ];
    if (!members_bytes(m, n, kb)) return false;
    double unfused = 0;
    for (int j = 0; j < n; j++) unfused += kb[j].read + kb[j].write;
    const sh_in *x0[SH_MAX_IN];
    int nx = read_inputs(m[0].si, m[0].key, x0);
    double xn = nx ? x0[0]->numel : -1;
    uint8_t xd = nx ? x0[0]->dsize : 0;
    double r = kb[0].read;
    bool read_later[FA_TA_MAX_SEQ] = {false}; /* a later member reads this member's output */
    for (int j = 1; j < n; j++) {
        const sh_in *in[SH_MAX_IN];
        int ni = read_inputs(m[j].si, m[j].key, in);
        bool used[FA_TA_MAX_SEQ] = {false}; /* an earlier output feeds one input of this member at most */
        for (int k = 0; k < ni; k++) {
            if (in[k]->list) {
                /* a TensorList (cat's inputs): its total size is recorded, not its tensors; the
                 * latest earlier outputs that fit in it are its intermediates, the rest is read */
                double left = in[k]->numel;
                for (int p = j - 1; p >= 0 && left > 0; p--)
                    if (!used[p] && kb[p].out_numel > 0 && kb[p].out_numel <= left) {
                        left -= kb[p].out_numel;
                        used[p] = read_later[p] = true;
                    }
                r += left * (in[k]->dsize ? in[k]->dsize : xd);
                continue;
            }
            bool inter = false;
            for (int p = j - 1; p >= 0 && !inter; p--)
                if (!used[p] && is_output(in[k], &kb[p])) inter = used[p] = read_later[p] = true;
            if (inter) continue;
            if (same_x && in[k]->numel == xn && (!in[k]->dsize || in[k]->dsize == xd)) continue;
            r += in[k]->numel * (in[k]->dsize ? in[k]->dsize : xd);
        }
    }
    /* written: the last output, any output no member reads (read outside the group), the residual */
    double w = 0;
    for (int p = 0; p < n; p++)
        if (p == n - 1 || !read_later[p] || (keep_first && p == 0)) w += kb[p].write;
    *rd = r;
    *wr = w;
    *saved = unfused > r + w ? unfused - (r + w) : 0;
    return true;
}

int fa__ta_attention_bytes(const ta_member *m, int n, double *rd, double *wr, double *saved, double *flops, bool *half)
{
    kbytes kb[FA_TA_MAX_SEQ];
    if (n < 3 || n > FA_TA_MAX_SEQ || !members_bytes(m, n, kb)) return 0;
    const kbytes *q = &kb[0], *o = &kb[n - 1];
    double scores = q->out_numel;
    /* the softmax reads the scores; the .V GEMM's first operand is the probabilities */
    for (int j = 1; j < n - 1; j++)
        if (m[j].key == FA_TA_KEY_SOFTMAX && kb[j].out_numel != scores) return -1;
    const sh_in *in[SH_MAX_IN];
    int ni = read_inputs(m[n - 1].si, m[n - 1].key, in);
    if (ni < 2 || in[ni - 2]->numel != scores) return -1;
    double probs_bytes = in[ni - 2]->numel * (in[ni - 2]->dsize ? in[ni - 2]->dsize : q->out_dsize);
    double v_bytes = o->read - probs_bytes;
    double mask = 0, unfused = 0;
    for (int j = 0; j < n; j++) unfused += kb[j].read + kb[j].write;
    for (int j = 1; j < n - 1; j++) {
        if (m[j].key != FA_TA_KEY_ADD && m[j].key != FA_TA_KEY_WHERE) continue;
        int nm = read_inputs(m[j].si, m[j].key, in);
        for (int k = 0; k < nm; k++)
            if (in[k]->numel != scores) mask += in[k]->numel * (in[k]->dsize ? in[k]->dsize : 1); /* the mask */
    }
    *rd = q->read + (v_bytes > 0 ? v_bytes : 0) + mask;
    *wr = o->write;
    *saved = unfused > *rd + *wr ? unfused - (*rd + *wr) : 0;
    *flops = (q->flops > 0 ? q->flops : 0) + (o->flops > 0 ? o->flops : 0);
    *half = q->out_dsize == 2;
    return 1;
}

int fa__ta_epilogue_bytes(const ta_member *m, int n, double *extra_rd, double *extra_wr, double *saved)
{
    kbytes kb[FA_TA_MAX_SEQ];
    if (n < 2 || n > FA_TA_MAX_SEQ || !members_bytes(m, n, kb)) return 0;
    const sh_in *in[SH_MAX_IN];
    int ni = read_inputs(m[1].si, m[1].key, in);
    bool reads = false;
    for (int k = 0; k < ni && !reads; k++) reads = is_output(in[k], &kb[0]);
    if (!reads) return -1;
    double rd, wr, sv;
    if (!fa__ta_group_bytes(m, n, false, false, &rd, &wr, &sv)) return 0;
    *extra_rd = rd > kb[0].read ? rd - kb[0].read : 0;
    *extra_wr = wr > kb[0].write ? wr - kb[0].write : 0;
    *saved = sv;
    return 1;
}
