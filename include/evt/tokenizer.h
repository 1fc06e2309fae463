/* tokenizer.h — text to token ids and back, from a Hugging Face tokenizer.json.
 *
 * `evtc decode --prompt-text TEXT` encodes a prompt with the checkpoint's own
 * tokenizer and prints the generated tokens as text. This reads the
 * byte-level BPE tokenizers of Qwen2/Qwen3 (and GPT-2's layout) and encodes
 * exactly as Hugging Face's `tokenizers` library does with
 * `encode(text, add_special_tokens=False)`:
 *
 *   1. added tokens ("<|im_start|>", ...) are cut out of the raw text first
 *      (leftmost, longest first), then those marked `normalized` out of the
 *      normalized rest;
 *   2. each piece between them is normalized (none, NFC, NFD, NFKC, NFKD,
 *      or a Sequence of them; utf8proc);
 *   3. pre-tokenized: Split by the tokenizer's regex (PCRE2, Unicode
 *      properties; behavior Isolated), then ByteLevel (its space prefix, its
 *      own GPT-2 regex if use_regex, every byte mapped to a printable
 *      character);
 *   4. each word merged by BPE, the lowest-ranked adjacent pair first (the
 *      leftmost of equal ranks), or kept whole if ignore_merges and the word
 *      is in the vocabulary.
 *
 * Decoding maps ids back to their strings and the byte-level characters back
 * to bytes, as the ByteLevel decoder does. The post-processor (a BOS a
 * template may add) is not applied: write such a token into the text.
 *
 *   evt_tokenizer *tk;
 *   if (evt_tokenizer_load("Qwen3-0.6B/tokenizer.json", &tk, &d)) ...
 *   int32_t *ids; int64_t n;
 *   evt_tokenizer_encode(tk, "Hello", 5, &ids, &n, &d);      // free(ids)
 *   char *text; size_t len;
 *   evt_tokenizer_decode(tk, ids, n, &text, &len, &d);       // free(text)
 *   evt_tokenizer_free(tk);
 *
 * Anything else a tokenizer.json may say (a WordPiece or Unigram model, a
 * Lowercase normalizer, a Metaspace pre-tokenizer, dropout, an added token
 * with lstrip, ...) is refused at load with a message naming the field, never
 * encoded differently. Every error is a status with a message. */
#ifndef EVT_TOKENIZER_H
#define EVT_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>
#include "evt/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct evt_tokenizer evt_tokenizer;

/* Reads a tokenizer.json. */
evt_status evt_tokenizer_load(const char *path, evt_tokenizer **out, evt_diag *d);
void evt_tokenizer_free(evt_tokenizer *tk);
/* The largest id plus one (the vocabulary and the added tokens). */
int64_t evt_tokenizer_vocab_size(const evt_tokenizer *tk);
/* The id of a token written exactly `token` (an added token or a vocabulary
   entry in its byte-level spelling), or -1. */
int64_t evt_tokenizer_token_id(const evt_tokenizer *tk, const char *token);
/* Encodes len bytes of UTF-8 text (invalid UTF-8 is an error); *ids is
   malloc'd (NULL when *n is 0). */
evt_status evt_tokenizer_encode(const evt_tokenizer *tk, const char *text, size_t len, int32_t **ids, int64_t *n,
                                evt_diag *d);
/* Decodes n ids into *text (malloc'd, NUL-terminated, *len bytes of valid
   UTF-8: bytes that do not form a character, such as a character cut
   between two tokens at the end, become U+FFFD, as in Hugging Face's
   decode). An id past the vocabulary is an error. */
evt_status evt_tokenizer_decode(const evt_tokenizer *tk, const int32_t *ids, int64_t n, char **text, size_t *len,
                                evt_diag *d);

#ifdef __cplusplus
}
#endif
#endif
