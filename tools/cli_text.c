/* cli_text.c — the CLI's text side (tools/cli_text.h): finding and
 * reading a tokenizer.json, encoding --prompt-text, printing generated
 * tokens as quoted text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli_text.h"

int cli_is_dir(const char *p)
{
    struct stat sb;
    return p && !stat(p, &sb) && S_ISDIR(sb.st_mode);
}

const char *cli_tokenizer_path(const char *tokenizer, const char *model, char *buf, size_t n)
{
    const char *dir = tokenizer ? (cli_is_dir(tokenizer) ? tokenizer : NULL) : (cli_is_dir(model) ? model : NULL);
    if (tokenizer && !dir) return tokenizer;
    if (!dir) return NULL;
    const size_t dl = strlen(dir);
    snprintf(buf, n, "%s%stokenizer.json", dir, dl && dir[dl - 1] == '/' ? "" : "/");
    struct stat sb;
    return tokenizer || !stat(buf, &sb) ? buf : NULL;
}

evt_tokenizer *cli_load_tokenizer(const char *path)
{
    evt_diag d;
    evt_diag_init(&d, "evtc"); /* the messages name the file */
    evt_tokenizer *tk = NULL;
    if (evt_tokenizer_load(path, &tk, &d) && d.text) fputs(d.text, stderr);
    evt_diag_free(&d);
    return tk;
}

int cli_encode_texts(int n, const char *const *texts, int32_t **ids, int64_t *lens, const evt_tokenizer *tk, const char *path)
{
    for (int i = 0; i < n; i++) {
        if (!texts[i]) continue;
        evt_diag d;
        evt_diag_init(&d, path);
        int64_t len = 0;
        int ok = !evt_tokenizer_encode(tk, texts[i], strlen(texts[i]), &ids[i], &len, &d);
        if (!ok && d.text) fputs(d.text, stderr);
        else if (ok && !len) fprintf(stderr, "evtc: --prompt-text \"%s\": no tokens in it\n", texts[i]), ok = 0;
        evt_diag_free(&d);
        if (!ok) return 0;
        lens[i] = len;
    }
    return 1;
}

/* Text in double quotes on one line: backslash, quote and control
   characters escaped, the rest (UTF-8) as it is. */
void cli_print_quoted(const char *s, size_t n)
{
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        const unsigned char ch = (unsigned char)s[i];
        if (ch == '\\' || ch == '"') printf("\\%c", ch);
        else if (ch == '\n') fputs("\\n", stdout);
        else if (ch == '\t') fputs("\\t", stdout);
        else if (ch == '\r') fputs("\\r", stdout);
        else if (ch < 0x20 || ch == 0x7f) printf("\\x%02x", ch);
        else putchar(ch);
    }
    putchar('"');
}

/* n ids as text, quoted, or why they cannot be; 0 if they cannot. */
int cli_print_decoded(const evt_tokenizer *tk, const int32_t *ids, int64_t n)
{
    evt_diag d;
    evt_diag_init(&d, "tokenizer");
    char *text = NULL;
    size_t len = 0;
    const int ok = !evt_tokenizer_decode(tk, ids, n, &text, &len, &d);
    if (ok) {
        cli_print_quoted(text, len);
    } else { /* e.g. random weights chose one of the vocabulary's padding rows */
        const char *msg = d.text ? strstr(d.text, "error: ") : NULL;
        msg = msg ? msg + 7 : "";
        printf("(not decoded: %.*s)", (int)strcspn(msg, "\n"), msg);
    }
    free(text);
    evt_diag_free(&d);
    return ok;
}

