// stubs.c - the few ggml.c symbols ggml-quants.c links against, for the
// eight types the harness drives (block sizes from ggml-common.h).
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define GGML_COMMON_DECL_C
#include "ggml-common.h"
#include "ggml.h"

static int64_t blck(enum ggml_type t) {
	switch (t) {
	case GGML_TYPE_Q4_K: case GGML_TYPE_Q5_K: case GGML_TYPE_Q6_K: return QK_K;
	case GGML_TYPE_Q5_0: case GGML_TYPE_Q5_1: case GGML_TYPE_Q4_0: case GGML_TYPE_Q4_1: case GGML_TYPE_Q8_0: return 32;
	default: return 0;
	}
}

size_t ggml_type_size(enum ggml_type t) {
	switch (t) {
	case GGML_TYPE_Q4_K: return sizeof(block_q4_K);
	case GGML_TYPE_Q5_K: return sizeof(block_q5_K);
	case GGML_TYPE_Q6_K: return sizeof(block_q6_K);
	case GGML_TYPE_Q5_0: return sizeof(block_q5_0);
	case GGML_TYPE_Q5_1: return sizeof(block_q5_1);
	case GGML_TYPE_Q4_0: return sizeof(block_q4_0);
	case GGML_TYPE_Q4_1: return sizeof(block_q4_1);
	case GGML_TYPE_Q8_0: return sizeof(block_q8_0);
	default: fprintf(stderr, "stubs.c: type %d not stubbed\n", (int)t); exit(3);
	}
}

size_t ggml_row_size(enum ggml_type t, int64_t ne) { return ggml_type_size(t) * ne / blck(t); }

const char *ggml_type_name(enum ggml_type t) { (void)t; return "stub"; }

void ggml_abort(const char *file, int line, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s:%d: ", file, line);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(3);
}
