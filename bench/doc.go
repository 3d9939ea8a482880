// Package bench measures decode speed the way the project reports it: a
// warm-up, several timed runs of T decode tokens, the median tok/s, the
// weight bytes each token read (the runtime's own byte counters), and a
// read-bandwidth probe taken in the same invocation with the same thread
// count, so every figure comes with the roofline it should be judged by.
// The shell scripts beside this package put cflowc and llama.cpp side by
// side on the same weights (see side-by-side.sh and llama-cpp.sh).
package bench
