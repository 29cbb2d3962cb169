/* The sub-commands of rmax-node, one file each; main.c maps names to them. */
#ifndef NODE_COMMANDS_H
#define NODE_COMMANDS_H

int cmd_peakflops(int argc, char **argv);
int cmd_cpurate(int argc, char **argv);
int cmd_dgemm(int argc, char **argv);
int cmd_stream(int argc, char **argv);
int cmd_memlat(int argc, char **argv);
int cmd_memcopy(int argc, char **argv);
int cmd_oslat(int argc, char **argv);

#endif
