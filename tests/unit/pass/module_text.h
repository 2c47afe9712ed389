/*
 * module_text.h — relax-json modules written inline in the pass tests (single quotes,
 * swapped for double quotes when the module is read): a f32 tensor type, a parameter,
 * a binding, and a relax function of one dataflow block.
 */
#ifndef RX_TEST_MODULE_TEXT_H
#define RX_TEST_MODULE_TEXT_H

#define TS(...) "{'tensor':{'shape':[" __VA_ARGS__ "],'dtype':'f32'}}"
#define P(name, type) "{'name':'" name "','type':" type "}"
#define B(var, value) "{'var':'" var "','value':" value "}"
#define FN(name, params, binds, res)                                                       \
    "'" name "':{'kind':'relax','params':[" params "],'body':{'blocks':[{'dataflow':true,"  \
    "'bindings':[" binds "]}],'result':'" res "'}}"

#endif
