/*
 * test_reader.c — the relax-json reader: one module using every construct is read
 * and its IR checked field by field; then a table of invalid modules, each asserting
 * the JSON path and a substring of the message of the error it must produce; then
 * the hostile inputs (deep nesting, huge documents and expressions, bad UTF-8).
 *
 * Test JSON is written with single quotes (turned into double quotes before
 * reading) so that it stays legible in C strings.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relax/json.h"
#include "relax/op.h"
#include "relax/text.h"
#include "../rx_check.h"

/* The text with ' replaced by " (heap). */
static char *dq(const char *s)
{
    char *t = rx_xstrdup(s);
    for (char *p = t; *p; p++)
        if (*p == '\'') *p = '"';
    return t;
}

static rx_module *read_q(const char *s, const rx_read_opts *o, rx_diags *d)
{
    char *t = dq(s);
    rx_module *m = rx_json_read(t, strlen(t), o, d);
    free(t);
    return m;
}

/* Fails the test with every diagnostic printed. */
static void dump(const rx_diags *d, const char *what)
{
    rx_sb sb = {0};
    rx_diags_format(d, &sb);
    ck_abort_msg("%s; errors:\n%s", what, rx_sb_str(&sb));
    rx_sb_free(&sb);
}

/* Asserts that reading fails with an error at `path` whose message holds `msg`. */
static void expect_error_opts(const char *text, size_t n, const rx_read_opts *o,
                              const char *path, const char *msg)
{
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = rx_json_read(text, n, o, &d);
    if (m) {
        rx_module_free(m);
        ck_abort_msg("expected an error at \"%s\" (%s), but the module was read", path, msg);
    }
    bool found = false;
    for (int i = 0; i < d.list.n && !found; i++)
        found = strcmp(d.list.items[i].path, path) == 0 && strstr(d.list.items[i].msg, msg);
    if (!found) {
        char what[512];
        snprintf(what, sizeof what, "no error at \"%s\" containing \"%s\"", path, msg);
        dump(&d, what);
    }
    rx_diags_free(&d);
}

static void expect_error(const char *q, const char *path, const char *msg)
{
    char *t = dq(q);
    expect_error_opts(t, strlen(t), NULL, path, msg);
    free(t);
}

/* ---------------------------------------------------------------- the valid module */

static const char *VALID =
    "{'format':'relax-json','version':1,'attrs':{'name':'mlp','x':[1,2.5,null,true,{'k':'v'}]},"
    " 'constants':{'w0':{'dtype':'f32','shape':[2,2],'data':'AACAPwAAAEAAAEBAAACAQA=='}},"
    " 'functions':{"
    "  'main':{'kind':'relax',"
    "    'params':[{'name':'x','type':{'tensor':{'shape':['n',4],'dtype':'f32'}}},"
    "              {'name':'s','type':{'shape':{'values':['k']}}},"
    "              {'name':'y','type':{'tensor':{'shape':['k * 2'],'dtype':'float32'}}},"
    "              {'name':'f','type':{'callable':{'params':[{'tensor':{'shape':['p'],'dtype':'f32'}}],"
    "                                             'ret':{'tensor':{'shape':['p'],'dtype':'f32'}}}}},"
    "              {'name':'c','type':{'prim':{'dtype':'bool'}}}],"
    "    'ret':{'object':{}},"
    "    'attrs':{'upper_bounds':{'n':4096},'note':'free'},"
    "    'body':{'blocks':["
    "      {'dataflow':true,'bindings':["
    "        {'var':'lv0','value':{'call_tir':'@exp','args':['x'],'out':{'tensor':{'shape':['n',4],'dtype':'f32'}}}},"
    "        {'var':'lv1','type':{'tensor':{'shape':['n * 4'],'dtype':'f32'}},'value':{'op':'flatten','args':['lv0']}},"
    "        {'var':'lv2','value':{'op':'relax.nn.softmax','args':['lv0'],'attrs':{'axis':0}}},"
    "        {'var':'lv3','value':{'tuple':['lv0','lv1']}},"
    "        {'var':'lv4','value':{'get_item':'lv3','index':1}},"
    "        {'var':'lv5','value':{'shape':['n',-1,'n + 1']}},"
    "        {'var':'lv6','value':{'const':'w0'}},"
    "        {'var':'lv7','value':{'const':1.5,'dtype':'f16'}},"
    "        {'var':'lv8','value':{'const':{'dtype':'i32','shape':[2],'data':'AQAAAAIAAAA='}}},"
    "        {'var':'lv9','value':{'prim':'n + 1','dtype':'i64'}},"
    "        {'var':'lv10','value':{'call':'@sub','args':['s','y']}},"
    "        {'var':'lv11','value':{'call':'f','args':['y']}},"
    "        {'var':'lv12','value':{'call_dps_library':'blas.sgemm','args':['lv6','lv6'],"
    "                               'out':{'tuple':[{'tensor':{'shape':[2,2],'dtype':'f32'}}]}}},"
    "        {'var':'lv13','value':{'call_tir':'@t2','args':['x'],'out':{'tensor':{'shape':['n'],'dtype':'f32'}},"
    "                               'tir_vars':['n * 2', 3]}}"
    "      ]},"
    "      {'bindings':["
    "        {'var':'lv14','value':{'op':'unique','args':['lv1']}},"
    "        {'var':'lv15','match_cast':'lv14','type':{'tensor':{'shape':['m'],'dtype':'f32'}}},"
    "        {'var':'lv16','value':{'if':'c',"
    "           'then':{'blocks':[{'bindings':[{'var':'t0','value':{'op':'exp','args':['lv15']}}]}],'result':'t0'},"
    "           'else':{'result':'lv15'}}}"
    "      ]}],"
    "     'result':{'tuple':['lv16','lv5','lv9','lv12','lv13','lv2','lv4','lv7','lv8','lv10','lv11']}}},"
    "  'sub':{'kind':'relax','params':[{'name':'s','type':{'shape':{'values':['n']}}},"
    "                                  {'name':'x','type':{'tensor':{'shape':['n * 2'],'dtype':'f32'}}}],"
    "         'ret':{'tensor':{'shape':['n * 2'],'dtype':'f32'}},'body':{'result':'x'}},"
    "  'exp':{'kind':'tir','params':[{'name':'X','buffer':{'shape':['n',4],'dtype':'f32'}},"
    "                                {'name':'Y','buffer':{'shape':['n',4],'dtype':'f32'}}],"
    "         'attrs':{'compute_pattern':'ElementWise'},"
    "         'body':{'grid':['i','j'],'extents':['n',4],"
    "                 'body':{'block':'b','body':{'store':'Y[i, j]','value':'exp(X[i, j])'}}}},"
    "  'mm':{'kind':'tir','params':[{'name':'X','buffer':{'shape':['n',128],'dtype':'f32'}},"
    "                               {'name':'W','buffer':{'shape':[128,256],'dtype':'f32'}},"
    "                               {'name':'Y','buffer':{'shape':['n',256],'dtype':'f32'}}],"
    "        'body':[{'grid':['i','j','k'],'extents':['n',256,128],'body':[{'block':'mm',"
    "                 'init':[{'store':'Y[i, j]','value':'0'}],"
    "                 'body':[{'store':'Y[i, j]','value':'Y[i, j] + X[i, k] * W[k, j]'}]}]}]},"
    "  't2':{'kind':'tir','params':[{'name':'A','buffer':{'shape':['n'],'dtype':'f32'}},"
    "                               {'name':'B','buffer':{'shape':['m'],'dtype':'f32','scope':'global'}},"
    "                               {'name':'m','dtype':'i64'},{'name':'q','dtype':'i32'}],"
    "        'body':[{'for':'i','extent':'n','kind':'parallel','thread':'blockIdx.x','body':["
    "                  {'alloc':'T','shape':[4],'dtype':'f32','scope':'local'},"
    "                  {'store':'T[0]','value':'A[i] * 2'},"
    "                  {'let':'v','value':'T[0] + 1.5','body':"
    "                     {'if':'i < m && v > 0.0','then':{'store':'B[i]','value':'select(v > 1, v, -v)'},"
    "                      'else':[{'store':'B[i]','value':'f32(i) / 2.0'}]}},"
    "                  {'block':'blk','iters':[{'var':'vi','kind':'spatial','dom':'n','bind':'i'}],"
    "                   'body':{'store':'B[vi]','value':'max(B[vi], f32(q))'}}]}]}"
    " }}";

/* The path of loc as text (static buffer). */
static const char *path_of(const rx_module *m, rx_loc loc)
{
    static char buf[256];
    rx_sb sb = {0};
    rx_loc_render(&m->locs, loc, &sb);
    snprintf(buf, sizeof buf, "%s", rx_sb_str(&sb));
    rx_sb_free(&sb);
    return buf;
}

START_TEST(test_valid_module)
{
    /* What the module says (names, kinds, shapes, attributes, every statement) is the
     * reader's golden, tests/passes/parse/valid_module.out.txt; here: what the text
     * cannot show, that every use resolves to its definition (pointer identity),
     * constants' bytes, and the locations of diagnostics. */
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = read_q(VALID, NULL, &d);
    if (!m) dump(&d, "the valid module was rejected");
    ck_assert_int_eq(rx_diags_count(&d), 0);
    ck_assert_int_eq(m->nfuncs, 5);
    ck_assert_int_eq(m->nconsts, 1);
    ck_assert_ptr_nonnull(m->attrs);

    /* constants */
    rx_const *w0 = m->consts[0];
    ck_assert_uint_eq(w0->nbytes, 16);
    float f0;
    memcpy(&f0, w0->data + 4, 4);
    ck_assert(f0 == 2.0f);

    /* main's signature */
    rx_func *mainf = rx_module_find(m, "main");
    ck_assert_ptr_eq(mainf, m->funcs[0]);
    const rx_sinfo *xs = mainf->params[0]->sinfo;
    ck_assert_ptr_eq(xs->dims[0]->u.var, mainf->svars[0]);
    const rx_sinfo *ys = mainf->params[2]->sinfo;
    ck_assert_ptr_eq(ys->dims[0]->u.op.a->u.var, mainf->svars[1]);
    const rx_sinfo *fs = mainf->params[3]->sinfo;
    ck_assert_ptr_eq(fs->ret->dims[0]->u.var, fs->svars[0]);

    /* main's body */
    const rx_seq *body = mainf->body;
    const rx_block *b0 = body->blocks[0], *b1 = body->blocks[1];
    const rx_binding *bd = b0->bindings;
    ck_assert_ptr_eq(bd[0].value->u.call.callee->u.global.fn, rx_module_find(m, "exp"));
    ck_assert_ptr_eq(bd[0].value->args[0], mainf->params[0]);
    ck_assert_ptr_null(bd[0].given);
    ck_assert_ptr_nonnull(bd[1].given);
    ck_assert_ptr_eq(bd[1].var->sinfo, bd[1].given);
    ck_assert_ptr_eq(bd[1].value->args[0], bd[0].var);
    ck_assert_ptr_eq(bd[6].value->u.konst, w0);
    const rx_const *h = bd[7].value->u.konst;
    ck_assert_uint_eq(h->nbytes, 2);
    const rx_const *c8 = bd[8].value->u.konst;
    ck_assert_ptr_null(c8->name);
    ck_assert_ptr_eq(bd[10].value->u.call.callee->u.global.fn, rx_module_find(m, "sub"));
    ck_assert_ptr_eq(bd[11].value->u.call.callee, mainf->params[3]);
    ck_assert_str_eq(path_of(m, bd[2].value->loc), "functions.main.body.blocks[0].bindings[2].value");
    ck_assert_str_eq(path_of(m, bd[13].loc),
                     "functions.main.body.blocks[0].bindings[13]");

    const rx_binding *bc = b1->bindings;
    ck_assert_ptr_eq(bc[1].value, bc[0].var);
    const rx_node *ifn = bc[2].value;
    ck_assert_ptr_eq(ifn->args[0], mainf->params[4]);
    ck_assert_ptr_eq(ifn->u.if_.else_body->result, bc[1].var);

    /* sub: a parameter expression over a variable of another parameter */
    rx_func *sub = rx_module_find(m, "sub");
    ck_assert_ptr_eq(sub->params[1]->sinfo->dims[0]->u.op.a->u.var, sub->svars[0]);
    ck_assert_ptr_ne(sub->svars[0], mainf->svars[0]); /* variables are per function */

    /* exp: a grid desugared, implicit iterators */
    rx_func *ex = rx_module_find(m, "exp");
    ck_assert_ptr_eq(ex->tparams[1].buf->shape[0]->u.var, ex->svars[0]);
    const rx_stmt *fi = ex->tbody.items[0];
    ck_assert_ptr_eq(fi->u.for_.extent->u.var, ex->svars[0]);
    const rx_stmt *fj = fi->u.for_.body.items[0];
    const rx_stmt *blk = fj->u.for_.body.items[0];
    ck_assert_ptr_eq(blk->u.block.iters[0].var, fi->u.for_.var);
    const rx_stmt *st = blk->u.block.body.items[0];
    ck_assert_ptr_eq(st->u.store.buf, ex->tparams[1].buf);

    /* t2: scalar parameters, loop kinds, alloc, let, if, explicit iterators */
    rx_func *t2 = rx_module_find(m, "t2");
    ck_assert_ptr_eq(t2->tparams[2].var, t2->svars[1]);
    ck_assert_ptr_eq(t2->tparams[1].buf->shape[0]->u.var, t2->svars[1]);
    const rx_stmt *lp = t2->tbody.items[0];
    const rx_stmt *al = lp->u.for_.body.items[0];
    ck_assert_ptr_eq(lp->u.for_.body.items[1]->u.store.buf, al->u.alloc.buf);
    const rx_stmt *eb = lp->u.for_.body.items[3];
    ck_assert_ptr_eq(eb->u.block.iters[0].bind->u.var, lp->u.for_.var);
    ck_assert_str_eq(path_of(m, eb->loc), "functions.t2.body[0].body[3]");
    rx_module_free(m);
    rx_diags_free(&d);
}
END_TEST

/* ---------------------------------------------------------------- invalid modules */

#define HEAD "{'format':'relax-json','version':1,'functions':{"
/* main(x: Tensor((n, 4), f32)) with one non-dataflow block of bindings B and result R. */
#define MAINP                                                                              \
    HEAD "'main':{'kind':'relax','params':[{'name':'x','type':{'tensor':{'shape':['n',4],"  \
         "'dtype':'f32'}}}],'body':{'blocks':[{'bindings':["
#define MAINB(B, R) MAINP B "]}],'result':" R "}}}}"
/* main with one binding of value V, followed by other functions F. */
#define MAINF(V, F) MAINP "{'var':'lv0','value':" V "}]}],'result':'lv0'}}," F "}}"
#define MAIN1(V) MAINB("{'var':'lv0','value':" V "}", "'lv0'")
/* A loop function f with params P and body S. */
#define TIRF(P, S) HEAD "'f':{'kind':'tir','params':[" P "],'body':" S "}}}"
#define Y44 "{'name':'Y','buffer':{'shape':[4,4],'dtype':'f32'}}"
#define H44 "{'name':'H','buffer':{'shape':[4,4],'dtype':'f16'}}"
#define STORE(V) "[{'grid':['i','j'],'extents':[4,4],'body':[{'store':'Y[i, j]','value':" V "}]}]"

typedef struct bad { const char *json, *path, *msg; } bad;

static const bad BAD[] = {
    /* 0: variables */
    {MAIN1("{'op':'exp','args':['lv9']}"), "functions.main.body.blocks[0].bindings[0].value.args[0]",
     "unknown variable \"lv9\""},
    {MAINB("{'var':'x','value':'x'}", "'x'"), "functions.main.body.blocks[0].bindings[0].var",
     "shadows a parameter"},
    {MAINB("{'var':'a','value':'x'},{'var':'a','value':'x'}", "'a'"),
     "functions.main.body.blocks[0].bindings[1].var", "is already bound"},
    {MAIN1("'lv0'"), "functions.main.body.blocks[0].bindings[0].value", "unknown variable \"lv0\""},
    {MAINB("{'var':'c','value':{'prim':1,'dtype':'bool'}},"
           "{'var':'r','value':{'if':'c','then':{'blocks':[{'bindings':[{'var':'t','value':'x'}]}],"
           "'result':'t'},'else':{'result':'x'}}},{'var':'u','value':'t'}", "'u'"),
     "functions.main.body.blocks[0].bindings[2].value", "not visible here"},
    /* 5: keys, format, version */
    {"{'format':'relax-json','version':1,'functions':{},'extends':1}", "extends",
     "unknown key \"extends\" (expected one of: format, version, attrs, functions, constants)"},
    {HEAD "'main':{'kind':'relax','params':[],'extends':'x','body':{'result':{'tuple':[]}}}}}",
     "functions.main.extends", "unknown key \"extends\""},
    {"{'format':'relax','version':1,'functions':{}}", "format", "expected \"relax-json\""},
    {"{'format':'relax-json','version':2,'functions':{}}", "version", "unsupported version 2"},
    {"{'format':'relax-json','version':1}", "", "missing key \"functions\""},
    /* 10: symbolic variables */
    {MAINB("{'var':'a','value':'x','type':{'tensor':{'shape':['q'],'dtype':'f32'}}}", "'a'"),
     "functions.main.body.blocks[0].bindings[0].type.tensor.shape[0]",
     "undefined symbolic variable \"q\""},
    {HEAD "'main':{'kind':'relax','params':[{'name':'x','type':{'tensor':{'shape':['n * 2']}}}],"
          "'body':{'result':'x'}}}}",
     "functions.main.params[0].type.tensor.shape[0]", "undefined symbolic variable \"n\""},
    {MAIN1("{'shape':['n * * 4']}"), "functions.main.body.blocks[0].bindings[0].value.shape[0]",
     "in \"n * * 4\": at column 5: expected an operand"},
    {MAIN1("{'shape':['n / 2']}"), "functions.main.body.blocks[0].bindings[0].value.shape[0]",
     "operator \"/\" is not allowed in a symbolic expression"},
    {HEAD "'main':{'kind':'relax','params':[{'name':'x','type':{'tensor':{'shape':[true]}}}],"
          "'body':{'result':'x'}}}}",
     "functions.main.params[0].type.tensor.shape[0]",
     "expected an integer or a symbolic expression string, found true"},
    /* 15: constants */
    {"{'format':'relax-json','version':1,'functions':{},"
     "'constants':{'w0':{'dtype':'f32','shape':[2],'data':'!!!'}}}",
     "constants.w0.data", "not valid base64"},
    {"{'format':'relax-json','version':1,'functions':{},"
     "'constants':{'w0':{'dtype':'f32','shape':[2,2],'data':'AACAPwAAAEA='}}}",
     "constants.w0.data", "data holds 8 bytes, expected 16"},
    {MAIN1("{'const':300,'dtype':'i8'}"), "functions.main.body.blocks[0].bindings[0].value.const",
     "300 is not representable as i8"},
    {MAIN1("{'const':'w9'}"), "functions.main.body.blocks[0].bindings[0].value.const",
     "unknown constant \"w9\""},
    /* 19: ops */
    {MAIN1("{'op':'foo','args':['x']}"), "functions.main.body.blocks[0].bindings[0].value.op",
     "unknown op \"foo\""},
    {MAIN1("{'op':'nn.softmax','args':['x'],'attrs':{'axes':1}}"),
     "functions.main.body.blocks[0].bindings[0].value.attrs.axes", "no attribute \"axes\""},
    {MAIN1("{'op':'add','args':['x']}"), "functions.main.body.blocks[0].bindings[0].value.args",
     "op \"add\" takes 2 arguments, found 1"},
    {MAIN1("{'op':'exp','args':['x'],'extra':1}"),
     "functions.main.body.blocks[0].bindings[0].value.extra", "unknown key \"extra\""},
    {MAIN1("{'op':'exp','call':'@main','args':['x']}"),
     "functions.main.body.blocks[0].bindings[0].value", "found both \"op\" and \"call\""},
    /* 24: annotations and dtypes */
    {HEAD "'main':{'kind':'relax','params':[{'name':'x','type':{'tensor':{'dtype':'f33'}}}],"
          "'body':{'result':'x'}}}}",
     "functions.main.params[0].type.tensor.dtype", "unknown dtype \"f33\""},
    {MAIN1("{'call_tir':'@main','args':['x'],'out':{'tensor':{'shape':[1],'dtype':'f32'}}}"),
     "functions.main.body.blocks[0].bindings[0].value.call_tir", "graph-level"},
    {MAIN1("{'call':'@nope','args':['x']}"), "functions.main.body.blocks[0].bindings[0].value.call",
     "unknown function \"@nope\""},
    {MAIN1("{'get_item':'x','index':-1}"), "functions.main.body.blocks[0].bindings[0].value.index",
     "non-negative integer index"},
    {MAINB("{'var':'a','match_cast':'x'}", "'a'"), "functions.main.body.blocks[0].bindings[0]",
     "missing key \"type\""},
    /* 29 */
    {MAINB("{'var':'c','value':{'prim':1,'dtype':'bool'}}]},{'dataflow':true,'bindings':["
           "{'var':'r','value':{'if':'c','then':{'result':'x'},'else':{'result':'x'}}}", "'r'"),
     "functions.main.body.blocks[1].bindings[0].value", "not allowed in a dataflow block"},
    {HEAD "'main':{'kind':'relax','params':[],'body':{'blocks':[]}}}}", "functions.main.body",
     "missing key \"result\""},
    {HEAD "'main':{'kind':'graph','body':{'result':'x'}}}}", "functions.main.kind",
     "expected \"relax\" or \"tir\""},
    {MAINF("{'call_tir':'@f','args':['x'],'out':{'shape':{}}}",
           "'f':{'kind':'tir','params':[],'body':[]}"),
     "functions.main.body.blocks[0].bindings[0].value.out", "must be a tensor annotation"},
    {MAINF("{'call':'@f','args':['x']}", "'f':{'kind':'tir','params':[],'body':[]}"),
     "functions.main.body.blocks[0].bindings[0].value.call", "call it with call_tir"},
    /* 34: attrs */
    {HEAD "'main':{'kind':'relax','params':[{'name':'x','type':{'shape':{'values':['n']}}}],"
          "'attrs':{'upper_bounds':{'z':4}},'body':{'result':'x'}}}}",
     "functions.main.attrs.upper_bounds.z", "not a symbolic variable of the signature"},
    {HEAD "'main':{'kind':'relax','params':[{'name':'x','type':{'shape':{'values':['n']}}}],"
          "'attrs':{'upper_bounds':{'n':0}},'body':{'result':'x'}}}}",
     "functions.main.attrs.upper_bounds.n", "expected a positive integer bound"},
    {HEAD "'g':{'kind':'tir','params':[],'attrs':{'compute_pattern':'Fancy'},'body':[]}}}",
     "functions.g.attrs.compute_pattern", "unknown compute pattern \"Fancy\""},
    /* 37: loop level */
    {TIRF(Y44, "[{'grid':['i','j'],'extents':[4,4],'body':[{'store':'Y[i]','value':'0'}]}]"),
     "functions.f.body[0].body[0].store", "buffer \"Y\" has 2 dimensions, found 1 index"},
    {TIRF(Y44 "," H44, STORE("'Y[i, j] + H[i, j]'")), "functions.f.body[0].body[0].value",
     "mismatched operand types f32 and f16"},
    {TIRF(Y44, STORE("'i / 2'")), "functions.f.body[0].body[0].value",
     "use // for integer division"},
    {TIRF(Y44, STORE("'Z[i, j]'")), "functions.f.body[0].body[0].value", "unknown buffer \"Z\""},
    {TIRF(Y44, "[{'for':'i','extent':4,'body':[{'for':'i','extent':4,'body':[]}]}]"),
     "functions.f.body[0].body[0].for", "loop variable \"i\" shadows a variable in scope"},
    {TIRF(Y44, "[{'store':'T[0, 0]','value':'1.0'},{'alloc':'T','shape':[1,1],'dtype':'f32'}]"),
     "functions.f.body[0].store", "unknown buffer \"T\""},
    {TIRF("{'name':'I','buffer':{'shape':[4],'dtype':'i32'}}",
          "{'for':'i','extent':4,'body':{'store':'I[i]','value':'1.5'}}"),
     "functions.f.body.body.value", "float literal 1.5 used as i32"},
    {TIRF(Y44, STORE("'foo(1.0)'")), "functions.f.body[0].body[0].value",
     "unknown function \"foo\""},
    {TIRF(Y44, STORE("'exp(1.0, 2.0)'")), "functions.f.body[0].body[0].value",
     "exp takes 1 argument, found 2"},
    {TIRF(Y44, "[{'for':'i','extent':4,'kind':'fast','body':[]}]"), "functions.f.body[0].kind",
     "expected one of serial, parallel"},
    {TIRF(Y44, "[{'loop':'i'}]"), "functions.f.body[0]", "expected a statement object"},
    {TIRF(Y44, STORE("'(Y[i, j] + 1.0'")), "functions.f.body[0].body[0].value",
     "expected \")\" before the end"},
    {TIRF("{'name':'Y','buffer':{'shape':['n'],'dtype':'f32'}},{'name':'n','dtype':'i64','buffer':{}}",
          "[]"),
     "functions.f.params[1]", "not both"},
    {TIRF(Y44, STORE("'Y[i, j] && 1'")), "functions.f.body[0].body[0].value",
     "needs bool operands"},
};

START_TEST(test_invalid)
{
    expect_error(BAD[_i].json, BAD[_i].path, BAD[_i].msg);
}
END_TEST

/* A name bound later in the function: the message points at its binding. */
START_TEST(test_use_before_binding)
{
    /* a later binding of the same block */
    expect_error(MAINB("{'var':'lv0','value':{'op':'exp','args':['lv1']}},"
                       "{'var':'lv1','value':'x'}", "'lv1'"),
                 "functions.main.body.blocks[0].bindings[0].value.args[0]",
                 "variable \"lv1\" is used before its binding at "
                 "functions.main.body.blocks[0].bindings[1].var");
    /* a binding of a later block, found through an if branch, and as the result */
    expect_error(HEAD "'main':{'kind':'relax','params':[{'name':'x','type':{'tensor':{'shape':[4],"
                 "'dtype':'f32'}}}],'body':{'blocks':[{'bindings':[{'var':'a','value':'b'}]},"
                 "{'bindings':[{'var':'c','value':{'prim':1,'dtype':'bool'}},"
                 "{'var':'r','value':{'if':'c',"
                 "'then':{'blocks':[{'bindings':[{'var':'b','value':'x'}]}],'result':'b'},"
                 "'else':{'result':'x'}}}]}],'result':'r'}}}}",
                 "functions.main.body.blocks[0].bindings[0].value",
                 "variable \"b\" is used before its binding at functions.main.body.blocks[1]."
                 "bindings[1].value.then.blocks[0].bindings[0].var");
    /* a use inside its own binding stays unknown, and says why */
    expect_error(MAIN1("{'op':'exp','args':['lv0']}"),
                 "functions.main.body.blocks[0].bindings[0].value.args[0]",
                 "unknown variable \"lv0\" (a binding cannot use its own variable)");
    /* a name bound nowhere */
    expect_error(MAIN1("{'op':'exp','args':['lv7']}"),
                 "functions.main.body.blocks[0].bindings[0].value.args[0]",
                 "unknown variable \"lv7\"");
}
END_TEST

/* ---------------------------------------------------------------- hostile input */

START_TEST(test_deep_nesting)
{
    size_t n = 100000;
    char *s = malloc(2 * n + 1);
    memset(s, '[', n);
    memset(s + n, ']', n);
    s[2 * n] = 0;
    expect_error_opts(s, 2 * n, NULL, "", "nested deeper than 512 levels");
    free(s);
}
END_TEST

START_TEST(test_max_bytes)
{
    /* A document over the limit is refused before parsing. */
    char *t = dq(MAIN1("'x'"));
    rx_read_opts o = {.max_bytes = 64};
    expect_error_opts(t, strlen(t), &o, "", "over the limit of 64 bytes");
    free(t);
}
END_TEST

START_TEST(test_expr_too_deep)
{
    size_t n = 100000;
    rx_sb sb = {0};
    rx_sb_puts(&sb, HEAD "'main':{'kind':'relax','params':[{'name':'x','type':{'shape':"
                         "{'values':['n']}}}],'body':{'blocks':[{'bindings':[{'var':'a','value':"
                         "{'prim':'");
    for (size_t i = 0; i < n; i++) rx_sb_putc(&sb, '(');
    rx_sb_putc(&sb, 'n');
    for (size_t i = 0; i < n; i++) rx_sb_putc(&sb, ')');
    rx_sb_puts(&sb, "'}}]}],'result':'a'}}}}");
    char *t = dq(rx_sb_str(&sb));
    rx_read_opts o = {.max_expr_len = 1 << 20};
    expect_error_opts(t, strlen(t), &o, "functions.main.body.blocks[0].bindings[0].value.prim",
                      "nested deeper than 256 levels");
    free(t);
    rx_sb_free(&sb);
}
END_TEST

START_TEST(test_expr_too_long)
{
    rx_sb sb = {0};
    rx_sb_puts(&sb, HEAD "'main':{'kind':'relax','params':[{'name':'x','type':{'shape':"
                         "{'values':['n']}}}],'body':{'blocks':[{'bindings':[{'var':'a','value':"
                         "{'prim':'n");
    for (int i = 0; i < (1 << 20) / 4; i++) rx_sb_puts(&sb, " + n");
    rx_sb_puts(&sb, "'}}]}],'result':'a'}}}}");
    char *t = dq(rx_sb_str(&sb));
    expect_error_opts(t, strlen(t), NULL, "functions.main.body.blocks[0].bindings[0].value.prim",
                      "characters long, over the limit of 65536");
    /* Within the length limit, a long chain is bounded by the depth limit. */
    rx_read_opts o = {.max_expr_len = 1 << 21};
    expect_error_opts(t, strlen(t), &o, "functions.main.body.blocks[0].bindings[0].value.prim",
                      "nested deeper than 256 levels");
    free(t);
    rx_sb_free(&sb);
}
END_TEST

START_TEST(test_bad_utf8)
{
    char *t = dq("{'format':'relax-json','version':1,'functions':{},'attrs':{'a':'\xff\xfe'}}");
    expect_error_opts(t, strlen(t), NULL, "", "invalid JSON at line 1");
    free(t);
}
END_TEST

START_TEST(test_duplicate_keys)
{
    char *t = dq("{'format':'relax-json','version':1,'functions':{},'version':1}");
    expect_error_opts(t, strlen(t), NULL, "", "duplicate");
    free(t);
}
END_TEST

START_TEST(test_trailing_garbage)
{
    char *t = dq("{'format':'relax-json','version':1,'functions':{}} x");
    expect_error_opts(t, strlen(t), NULL, "", "invalid JSON");
    free(t);
}
END_TEST

START_TEST(test_all_errors_reported)
{
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = read_q(MAINB("{'var':'a','value':'q1'},{'var':'b','value':'q2'},"
                                "{'var':'c','value':{'op':'nope'}}", "'q3'"),
                          NULL, &d);
    ck_assert_ptr_null(m);
    ck_assert_int_eq(rx_diags_count(&d), 4);
    ck_assert_str_eq(d.list.items[3].path, "functions.main.body.result");
    rx_diags_free(&d);
}
END_TEST

START_TEST(test_read_file)
{
    rx_diags d;
    rx_diags_init(&d);
    ck_assert_ptr_null(rx_json_read_file("/nonexistent/m.json", NULL, &d));
    ck_assert_int_eq(d.list.n, 1);
    ck_assert_str_eq(d.list.items[0].path, "");
    ck_assert_ptr_nonnull(strstr(d.list.items[0].msg, "cannot read"));
    rx_diags_free(&d);

    char path[] = "/tmp/rx_reader_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    char *t = dq(VALID);
    FILE *fp = fdopen(fd, "w");
    fputs(t, fp);
    fclose(fp);
    rx_diags_init(&d);
    rx_module *m = rx_json_read_file(path, NULL, &d);
    ck_assert_ptr_nonnull(m);
    rx_module_free(m);
    rx_read_opts o = {.max_bytes = 100};
    ck_assert_ptr_null(rx_json_read_file(path, &o, &d));
    ck_assert_ptr_nonnull(strstr(d.list.items[0].msg, "over the limit of 100 bytes"));
    rx_diags_free(&d);
    remove(path);
    free(t);
}
END_TEST

START_TEST(test_literal_typing)
{
    /* A literal takes the other operand's type; a cast of a literal is a typed literal. */
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = read_q(TIRF(H44 ",{'name':'I','buffer':{'shape':[4],'dtype':'i32'}}",
                               "[{'grid':['i','j'],'extents':[4,4],'body':["
                               "{'store':'H[i, j]','value':'H[i, j] * 2 + .5'},"
                               "{'store':'I[i]','value':'i32(3) + I[j % 4] // 2'},"
                               "{'store':'H[i, j]','value':1}]}]"),
                          NULL, &d);
    if (!m) dump(&d, "typing module rejected");
    const rx_stmt *jl = m->funcs[0]->tbody.items[0]->u.for_.body.items[0];
    const rx_expr *v0 = jl->u.for_.body.items[0]->u.store.value;
    ck_assert_int_eq(v0->dtype, RX_DT_F16);
    ck_assert_int_eq(v0->u.op.b->kind, RX_E_FLOAT);
    ck_assert_int_eq(v0->u.op.b->dtype, RX_DT_F16);
    ck_assert_int_eq(v0->u.op.a->u.op.b->kind, RX_E_FLOAT); /* the 2, as f16 */
    const rx_expr *v1 = jl->u.for_.body.items[1]->u.store.value;
    ck_assert_int_eq(v1->u.op.a->kind, RX_E_INT);
    ck_assert_int_eq(v1->u.op.a->dtype, RX_DT_I32);
    ck_assert_int_eq(v1->u.op.b->kind, RX_E_FLOORDIV);
    ck_assert_int_eq(jl->u.for_.body.items[2]->u.store.value->dtype, RX_DT_F16);
    rx_module_free(m);
    rx_diags_free(&d);
}
END_TEST

START_TEST(test_roundtrip)
{
    /* What the writer writes reads back to a structurally equal module. */
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = read_q(VALID, NULL, &d);
    ck_assert_ptr_nonnull(m);
    rx_sb w = {0};
    rx_json_write(m, 0, &w);
    rx_module *m2 = rx_json_read(w.p, w.n, NULL, &d);
    if (!m2) dump(&d, "the written module was rejected");
    rx_sb why = {0};
    ck_assert_msg(rx_struct_equal(m, m2, &why), "round trip differs: %s", rx_sb_str(&why));
    rx_sb_free(&why);
    rx_sb_free(&w);
    rx_module_free(m2);
    rx_module_free(m);
    rx_diags_free(&d);
}
END_TEST

START_TEST(test_symbolic_definitions)
{
    /* A parameter expression may use a variable a later parameter defines; a
     * callable's fresh variables stay local to it; match_cast defines new ones and
     * reuses known ones; an if branch's match_cast variables end with the branch. */
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = read_q(
        HEAD "'main':{'kind':'relax','params':["
        "  {'name':'x','type':{'tensor':{'shape':['n * 2', 'min(n, 8) // 2 % 3'],'dtype':'f32'}}},"
        "  {'name':'s','type':{'tuple':[{'shape':{'values':['n']}},{'prim':{'dtype':'i64','value':'k'}}]}},"
        "  {'name':'g','type':{'callable':{'params':[{'shape':{'values':['n','p']}}],"
        "                                  'ret':{'shape':{'values':['p + n']}}}}}],"
        " 'ret':{'tensor':{'ndim':2,'dtype':'f32'}},"
        " 'body':{'blocks':[{'bindings':["
        "   {'var':'a','match_cast':'x','type':{'tensor':{'shape':['n * 2','q'],'dtype':'f32'}}},"
        "   {'var':'b','value':{'shape':['q + k']}}]}],'result':'a'}}}}",
        NULL, &d);
    if (!m) dump(&d, "symbolic module rejected");
    rx_func *f = m->funcs[0];
    ck_assert_int_eq(f->nsvars, 2);
    ck_assert_str_eq(f->svars[0]->name, "n");
    ck_assert_str_eq(f->svars[1]->name, "k");
    const rx_sinfo *g = f->params[2]->sinfo;
    ck_assert_int_eq(g->nsvars, 1);
    ck_assert_str_eq(g->svars[0]->name, "p");
    ck_assert_ptr_eq(g->fields[0]->dims[0]->u.var, f->svars[0]);
    const rx_sinfo *mc = f->body->blocks[0]->bindings[0].given;
    ck_assert_int_eq(mc->dims[0]->kind, RX_E_MUL);
    ck_assert_str_eq(mc->dims[1]->u.var->name, "q");
    rx_module_free(m);
    rx_diags_free(&d);
    /* p is local to the callable: using it in the body is an error. */
    expect_error(HEAD "'main':{'kind':'relax','params':["
                 "  {'name':'g','type':{'callable':{'params':[{'shape':{'values':['p']}}],"
                 "                                  'ret':{'object':{}}}}}],"
                 " 'body':{'result':{'shape':['p']}}}}}",
                 "functions.main.body.result.shape[0]", "undefined symbolic variable \"p\"");
}
END_TEST

static Suite *reader_suite(void)
{
    Suite *s = suite_create("json_reader");
    TCase *tc = tcase_create("reader");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_valid_module);
    tcase_add_loop_test(tc, test_invalid, 0, RX_COUNTOF(BAD));
    tcase_add_test(tc, test_use_before_binding);
    tcase_add_test(tc, test_deep_nesting);
    tcase_add_test(tc, test_max_bytes);
    tcase_add_test(tc, test_expr_too_deep);
    tcase_add_test(tc, test_expr_too_long);
    tcase_add_test(tc, test_bad_utf8);
    tcase_add_test(tc, test_duplicate_keys);
    tcase_add_test(tc, test_trailing_garbage);
    tcase_add_test(tc, test_all_errors_reported);
    tcase_add_test(tc, test_read_file);
    tcase_add_test(tc, test_literal_typing);
    tcase_add_test(tc, test_roundtrip);
    tcase_add_test(tc, test_symbolic_definitions);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return rx_check_run(reader_suite());
}
