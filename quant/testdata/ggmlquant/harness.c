// harness.c - llama.cpp's own quantizers (ggml/src/ggml-quants.c, compiled
// unmodified beside this file) driven over stdin/stdout, so quant's Go
// tests can compare bytes with them (ggml_truth_test.go). No cgo: the Go
// test builds this with cc and runs it.
//
// Input, repeated until EOF, little-endian:
//   int32 ggml_type, int32 nrows, int32 n_per_row, int32 has_imatrix,
//   float32 src[nrows*n_per_row], float32 imatrix[n_per_row] if has_imatrix
// Output per request: the bytes quantize_<type> writes (what
// llama-quantize's ggml_quantize_chunk calls), then float32
// dequantize_row_<type> of those bytes (nrows*n_per_row values).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ggml.h"
#include "ggml-quants.h"

static int read_full(void *p, size_t n) { return fread(p, 1, n, stdin) == n; }

int main(void) {
	int32_t hdr[4];
	while (read_full(hdr, sizeof hdr)) {
		enum ggml_type type = (enum ggml_type)hdr[0];
		int64_t nrows = hdr[1], n = hdr[2];
		size_t row = ggml_row_size(type, n);
		float *src = malloc(sizeof(float) * nrows * n);
		float *imx = hdr[3] ? malloc(sizeof(float) * n) : NULL;
		void *dst = malloc(row * nrows);
		float *deq = malloc(sizeof(float) * nrows * n);
		if (!src || !dst || !deq || (hdr[3] && !imx)) return 3;
		if (!read_full(src, sizeof(float) * nrows * n)) return 2;
		if (imx && !read_full(imx, sizeof(float) * n)) return 2;
		size_t got;
		switch (type) {
		case GGML_TYPE_Q4_K: got = quantize_q4_K(src, dst, nrows, n, imx); dequantize_row_q4_K(dst, deq, nrows * n); break;
		case GGML_TYPE_Q5_K: got = quantize_q5_K(src, dst, nrows, n, imx); dequantize_row_q5_K(dst, deq, nrows * n); break;
		case GGML_TYPE_Q6_K: got = quantize_q6_K(src, dst, nrows, n, imx); dequantize_row_q6_K(dst, deq, nrows * n); break;
		case GGML_TYPE_Q5_0: got = quantize_q5_0(src, dst, nrows, n, imx); dequantize_row_q5_0(dst, deq, nrows * n); break;
		case GGML_TYPE_Q5_1: got = quantize_q5_1(src, dst, nrows, n, imx); dequantize_row_q5_1(dst, deq, nrows * n); break;
		case GGML_TYPE_Q4_0: got = quantize_q4_0(src, dst, nrows, n, imx); dequantize_row_q4_0(dst, deq, nrows * n); break;
		case GGML_TYPE_Q4_1: got = quantize_q4_1(src, dst, nrows, n, imx); dequantize_row_q4_1(dst, deq, nrows * n); break;
		case GGML_TYPE_Q8_0: got = quantize_q8_0(src, dst, nrows, n, imx); dequantize_row_q8_0(dst, deq, nrows * n); break;
		default: return 2;
		}
		if (got != row * nrows) return 3;
		fwrite(dst, 1, row * nrows, stdout);
		fwrite(deq, sizeof(float), nrows * n, stdout);
		fflush(stdout);
		free(src); free(imx); free(dst); free(deq);
	}
	return 0;
}
