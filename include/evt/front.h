/* evt/front.h — the .evt text format: parse it into an evt_graph, print an
 * evt_graph back as normalised text.
 *
 * A .evt file declares, in this order of dependence, symbols (runtime
 * integers), tensors, event tensors and calls (task grids with their wait and
 * notify edges). docs/language.md is the full reference; a tiny program:
 *
 *   sym n = 4 in [1, 1024]
 *   tensor A : f32[n, 128] input = random(seed=1)
 *   tensor S : f32[n] output
 *   event E[n]
 *   call rows = rowsum(A, S, 128) over (i) in [n] {
 *       notify E[i]
 *   }
 *
 * Typical use:
 *
 *   evt_diag d;
 *   evt_diag_init(&d, "prog.evt");
 *   evt_graph *g = evt_parse_file("prog.evt", &d);
 *   if (!g) { fputs(d.text, stderr); ... }     // "prog.evt:3:9: error: ..."
 *   evt_printer pr = {0};
 *   evt_print_graph(&pr, g);                   // pr.buf: normalised text
 *   evt_pr_free(&pr); evt_graph_free(g); evt_diag_free(&d);
 *
 * The parser checks syntax and scoping (every name resolves, ranks and index
 * counts agree, no duplicate names). Whether an operator exists and takes the
 * given arguments is the verifier's business (evt_pass_verify), not the
 * parser's. The parser never crashes on malformed input: it reports up to 20
 * errors, each with a line and column, and returns NULL.
 */
#ifndef EVT_FRONT_H
#define EVT_FRONT_H

#include <stddef.h>
#include "evt/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Parses .evt text (need not be NUL-terminated). On success returns a graph
 * (caller frees with evt_graph_free). On failure returns NULL and appends
 * every error to diag (may be NULL) as "FILE:LINE:COL: error: MESSAGE". */
evt_graph *evt_parse(const char *text, size_t len, evt_diag *diag);

/* Reads and parses a file; messages name `path`. An I/O error is reported
 * to diag and NULL returned. */
evt_graph *evt_parse_file(const char *path, evt_diag *diag);

/* Appends the normalised program to p. The output parses back to an
 * identical graph: dump(parse(dump(g))) equals dump(g) byte for byte. */
void evt_print_graph(evt_printer *p, const evt_graph *g);

#ifdef __cplusplus
}
#endif
#endif
