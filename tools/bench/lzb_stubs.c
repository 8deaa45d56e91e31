// temporary
#include "lzb.h"
int lzb_cmd_msgrate(int argc, char **argv) { (void)argc; (void)argv; return 1; }
int lzb_cmd_threads(int argc, char **argv) { (void)argc; (void)argv; return 1; }
int lzb_cmd_wakeup(int argc, char **argv) { (void)argc; (void)argv; return 1; }
int lzb_cmd_alt(int argc, char **argv) { (void)argc; (void)argv; return 1; }
int lzb_cmd_plot(int argc, char **argv) { (void)argc; (void)argv; return 1; }
#include <math.h>
double lzb_alt_pingpong_ns(const char *kind, uint32_t size, uint64_t iters) { (void)kind; (void)size; (void)iters; return NAN; }
