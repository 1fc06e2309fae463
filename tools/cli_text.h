/* cli_text.h — the CLI's text side: evtc decode --prompt-text and evtc
 * tokenize (tools/evtc.c) through include/evt/tokenizer.h. */
#ifndef EVTC_CLI_TEXT_H
#define EVTC_CLI_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include "evt/tokenizer.h"

/* 1 if path names a directory. */
int cli_is_dir(const char *path);
/* The tokenizer.json to read: `tokenizer` (a file, or a directory holding
   one) if given, else the `model` checkpoint directory's if it holds one;
   NULL for none. buf (n bytes) holds a path built from a directory. */
const char *cli_tokenizer_path(const char *tokenizer, const char *model, char *buf, size_t n);
/* Reads it; NULL after printing why. */
evt_tokenizer *cli_load_tokenizer(const char *path);
/* Encodes every non-NULL texts[i] into ids[i] (malloc'd) and lens[i]; 0
   after printing why (bad UTF-8, no tokens). */
int cli_encode_texts(int n, const char *const *texts, int32_t **ids, int64_t *lens, const evt_tokenizer *tk, const char *path);
/* Text in double quotes on one line: backslash, quote and control
   characters escaped, the rest (UTF-8) as it is. */
void cli_print_quoted(const char *s, size_t n);
/* n ids as quoted text, or "(not decoded: why)"; 0 in that case. */
int cli_print_decoded(const evt_tokenizer *tk, const int32_t *ids, int64_t n);

#endif
