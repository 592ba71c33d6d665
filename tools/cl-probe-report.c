/* cl-probe's report writer: one set of calls for the text table and JSON. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cl-probe.h"

/* ---- output: one writer for both the text table and JSON ---- */

int json_mode;
static int json_first = 1; /* whether the next JSON member is the first of its object */

void json_string(const char *s) {
  putchar('"');
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') printf("\\%c", c);
    else if (c == '\n') printf("\\n");
    else if (c == '\t') printf("\\t");
    else if (c < 0x20) printf("\\u%04x", c);
    else putchar(c);
  }
  putchar('"');
}

void json_key(const char *key) {
  printf("%s", json_first ? "" : ",");
  json_first = 0;
  if (key) {
    json_string(key);
    putchar(':');
  }
}
void json_open(const char *key, char bracket) {
  json_key(key);
  putchar(bracket);
  json_first = 1;
}
void json_close(char bracket) {
  putchar(bracket);
  json_first = 0;
}

/* A row: name and value text, or an error shown inline. */
void row(const char *name, const char *error, const char *fmt, ...) {
  char value[1024] = "";
  if (!error && fmt) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(value, sizeof value, fmt, ap);
    va_end(ap);
  }
  if (json_mode) {
    json_open(name, '{');
    if (error) {
      json_key("error");
      json_string(error);
    } else {
      json_key("value");
      json_string(value);
    }
    json_close('}');
  } else {
    printf("  %-32s %s%s\n", name, error ? "ERROR: " : "", error ? error : value);
  }
}

void heading(const char *fmt, ...) {
  if (json_mode) return;
  va_list ap;
  va_start(ap, fmt);
  printf("\n");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
}

