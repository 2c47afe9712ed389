/*
 * test_verify.c — rx_verify_module between pipeline stages: a malformed module planted
 * after a stage (through rx_build_opts.instrument) fails the build at that stage, with
 * a diagnostic naming the stage, the function and the broken rule; the well-formed
 * module passes every stage at every opt level; relaxc passes prints the table.
 */
#include "vg_test.h"

#include <stdio.h>

/* main(x: (n, 128) f32) = copy(exp(x)) + x: an op, a user kernel, an add. */
static const char mod[] =
    "{'format':'relax-json','version':1,'functions':{"
    "'main':{'kind':'relax','params':[{'name':'x','type':{'tensor':{'shape':['n',128],'dtype':'f32'}}}],"
    "'body':{'blocks':[{'dataflow':true,'bindings':["
    "{'var':'a','value':{'op':'exp','args':['x']}},"
    "{'var':'b','value':{'call_tir':'@copy','args':['a'],'out':{'tensor':{'shape':['n',128],'dtype':'f32'}}}},"
    "{'var':'c','value':{'op':'add','args':['b','x']}}]}],"
    "'result':'c'}},"
    "'copy':{'kind':'tir','params':[{'name':'X','buffer':{'shape':['m',128],'dtype':'f32'}},"
    "{'name':'Y','buffer':{'shape':['m',128],'dtype':'f32'}}],"
    "'body':[{'grid':['i','j'],'extents':['m',128],'body':[{'block':'copy',"
    "'body':[{'store':'Y[i, j]','value':'X[i, j]'}]}]}]}}}";

typedef void (*plant_fn)(rx_module *m);

typedef struct plant {
    const char *stage; /* plant after this stage */
    plant_fn fn;
} plant;

static void instrument(const char *stage, rx_module *m, void *ud)
{
    const plant *p = ud;
    if (!strcmp(stage, p->stage)) p->fn(m);
}

/* The first STORE in ss (depth first), or NULL. */
static rx_stmt *first_store(rx_stmts *ss)
{
    for (int i = 0; i < ss->n; i++) {
        rx_stmt *s = ss->items[i], *r = NULL;
        if (s->kind == RX_S_STORE) return s;
        if (s->kind == RX_S_FOR) r = first_store(&s->u.for_.body);
        else if (s->kind == RX_S_BLOCK) r = first_store(&s->u.block.body);
        else if (s->kind == RX_S_LET) r = first_store(&s->u.let.body);
        else if (s->kind == RX_S_IF) r = first_store(&s->u.if_.then_s);
        if (r) return r;
    }
    return NULL;
}

/* The first loop function's first STORE. */
static rx_stmt *a_store(rx_module *m)
{
    for (int i = 0; i < m->nfuncs; i++)
        if (m->funcs[i]->kind == RX_F_TIR) {
            rx_stmt *s = first_store(&m->funcs[i]->tbody);
            if (s) return s;
        }
    ck_abort_msg("no store");
    return NULL;
}

static rx_block *main_block(rx_module *m)
{
    rx_func *f = rx_module_find(m, "main");
    ck_assert(f && f->body->nblocks > 0);
    return f->body->blocks[0];
}

/* The first binding is dropped: its variable is used and never bound. */
static void drop_binding(rx_module *m)
{
    rx_block *b = main_block(m);
    memmove(&b->bindings[0], &b->bindings[1], sizeof *b->bindings * (size_t)(b->nbindings - 1));
    b->nbindings--;
}

/* A binding is repeated: its variable is bound twice. */
static void repeat_binding(rx_module *m)
{
    rx_block *b = main_block(m);
    rx_binding *nb = RX_NEWN(m->arena, rx_binding, b->nbindings + 1);
    memcpy(nb, b->bindings, sizeof *nb * (size_t)b->nbindings);
    nb[b->nbindings] = b->bindings[0];
    b->bindings = nb;
    b->nbindings++;
}

/* A loop function is renamed: the GLOBALs calling it no longer resolve. */
static void rename_kernel(rx_module *m)
{
    for (int i = 0; i < m->nfuncs; i++)
        if (m->funcs[i]->kind == RX_F_TIR) {
            m->funcs[i]->name = "renamed";
            return;
        }
}

/* A store to a buffer that is neither a parameter nor allocated. */
static void stray_buffer(rx_module *m)
{
    rx_stmt *s = a_store(m);
    rx_buffer *b = RX_NEW(m->arena, rx_buffer);
    *b = *s->u.store.buf;
    b->name = "Stray";
    b->id = rx_module_new_id(m);
    s->u.store.buf = b;
}

/* A store with one index too few. */
static void short_index(rx_module *m)
{
    a_store(m)->u.store.nidx--;
}

/* A store index that is a variable no loop introduces. */
static void unbound_loop_var(rx_module *m)
{
    rx_stmt *s = a_store(m);
    rx_svar *v = rx_svar_new(m->arena, "ghost", RX_DT_I64, RX_SV_LOOP, rx_module_new_id(m));
    s->u.store.idx[0] = rx_e_var(m->arena, v);
}

/* A bound value without its annotation. */
static void drop_annotation(rx_module *m)
{
    main_block(m)->bindings[0].value->sinfo = NULL;
}

/* Builds mod with p planted at level opt; returns the diagnostics and the stage that
 * failed. */
static char *planted(const plant *p, int opt, const char **failed)
{
    char *j = vt_json(mod);
    rx_build_opts o = {.target = "cpu", .opt_level = opt, .verify_each = true,
                       .instrument = instrument, .instrument_ud = (void *)p};
    rx_diags d;
    rx_diags_init(&d);
    rx_build_result r;
    ck_assert_msg(!rx_build_run(j, strlen(j), &o, &r, &d), "planted fault after %s not caught",
                  p->stage);
    *failed = r.failed;
    free(r.rxa);
    rx_sb msg = {0};
    rx_diags_format(&d, &msg);
    rx_diags_free(&d);
    free(j);
    return rx_sb_take(&msg);
}

START_TEST(planted_faults_name_the_stage)
{
    static const struct {
        plant p;
        int opt;
        const char *want;
    } cases[] = {
        {{"deduce", drop_binding}, 0, "after deduce: @main: variable a is used but never bound"},
        {{"canonicalize", repeat_binding}, 1, "after canonicalize: @main: variable a is bound twice"},
        {{"legalize", rename_kernel}, 0, "after legalize: @main: @copy is not a function of this module"},
        {{"fuse_tir", stray_buffer}, 2, "after fuse_tir: @"},
        {{"schedule", short_index}, 1, "indices (it has 2 dimensions)"},
        {{"analysis", unbound_loop_var}, 0, "after analysis: @copy: symbolic variable ghost is used out of its scope"},
        {{"dce", drop_annotation}, 1, "after dce: @main: an expression without its annotation"},
    };
    for (int i = 0; i < RX_COUNTOF(cases); i++) {
        const char *failed = NULL;
        char *e = planted(&cases[i].p, cases[i].opt, &failed);
        ck_assert_msg(strstr(e, "malformed module after ") && strstr(e, cases[i].want),
                      "case %d: %s", i, e);
        ck_assert_msg(failed && !strcmp(failed, cases[i].p.stage), "case %d failed at %s", i,
                      failed ? failed : "(none)");
        free(e);
    }
    /* fuse_tir's case names the buffer */
    const char *failed;
    plant p = {"fuse_tir", stray_buffer};
    char *e = planted(&p, 2, &failed);
    ck_assert_msg(strstr(e, "a store of buffer Stray, which is neither a parameter nor allocated"),
                  "%s", e);
    free(e);
}
END_TEST

/* Without a plant the module passes the verifier after every stage at every level. */
START_TEST(well_formed_at_every_level)
{
    for (int opt = 0; opt <= 3; opt++) {
        rx_build_opts o = {.target = "cpu", .opt_level = opt, .verify_each = true};
        size_t n;
        free(vt_build(mod, &o, &n));
    }
}
END_TEST

/* The verifier alone, on a module straight from the reader (deduced). */
START_TEST(verify_direct)
{
    char *j = vt_json(mod);
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = NULL;
    const char *failed = NULL;
    rx_build_opts o = {.target = "cpu", .opt_level = 0};
    ck_assert(rx_build_module(j, strlen(j), &o, "deduce", &m, &failed, &d));
    ck_assert(rx_verify_module(m, NULL, &d));
    ck_assert_int_eq(rx_diags_count(&d), 0);
    drop_binding(m);
    ck_assert(!rx_verify_module(m, NULL, &d));
    rx_sb msg = {0};
    rx_diags_format(&d, &msg);
    ck_assert_msg(strstr(rx_sb_str(&msg), "malformed module: @main: variable a is used"), "%s",
                  rx_sb_str(&msg));
    rx_sb_free(&msg);
    rx_module_free(m);
    rx_diags_free(&d);
    free(j);
}
END_TEST

/* The pipeline table through its API: every optional stage is a row. */
START_TEST(stage_rows)
{
    rx_stage_info st;
    int n = 0, switches = 0;
    for (int i = 0; rx_pipeline_stage(i, &st); i++, n++) {
        ck_assert_str_eq(st.name, rx_pipeline_name(i));
        ck_assert_int_eq(st.min_opt, rx_pipeline_min_opt(i));
        ck_assert(st.step && *st.step && st.what && *st.what && st.paper);
        if (!strcmp(st.kind, "switch")) {
            switches++;
            ck_assert_str_eq(st.name, "memory_plan");
        }
    }
    ck_assert_int_eq(n, rx_pipeline_count());
    ck_assert_int_eq(switches, 1);
    ck_assert(!rx_pipeline_stage(n, &st));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("verify");
    TCase *t = tcase_create("verify");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, planted_faults_name_the_stage);
    tcase_add_test(t, well_formed_at_every_level);
    tcase_add_test(t, verify_direct);
    tcase_add_test(t, stage_rows);
    suite_add_tcase(s, t);
    return rx_check_run(s);
}
