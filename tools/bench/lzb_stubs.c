// temporary
#include "lzb.h"
int lzb_cmd_lat(int argc, char **argv) { (void)argc; (void)argv; return 1; }
int lzb_cmd_headline(int argc, char **argv) { (void)argc; (void)argv; return 1; }
