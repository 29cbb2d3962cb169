/* Executables with sub-commands (rmax-node, rmax-net, rmax-hpcc): each sub-command's
 * file registers itself with one RMX_SUBCMD line, and main() is one dispatch call.
 * No table is written by hand: the linker gathers the entries (below). */
#ifndef RMX_SUBCMD_H
#define RMX_SUBCMD_H

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv); /* gets the whole argv; its options start at argv[2] */
    const char *summary;               /* its line in `<exe> --help` */
} rmx_subcmd;

/* RMX_SUBCMD("stream", cmd_stream, "STREAM bandwidth");  at file scope, after cmd_stream.
 * Puts a pointer to the entry in section rmx_subcmds; GNU ld and lld bound such a section
 * with __start_rmx_subcmds and __stop_rmx_subcmds. Pointers, not the entries themselves, so
 * that no padding the compiler adds to an object can fall between them; `used` so that the
 * compiler keeps an entry nothing names. The file must be linked as an object, not through a
 * static library, which would leave out a member nothing references. */
#define RMX_SUBCMD(name, fn, summary)                                                          \
    int fn(int, char **);                                                                      \
    static const rmx_subcmd rmx_subcmd_##fn = {name, fn, summary};                             \
    static const rmx_subcmd *const rmx_subcmd_ptr_##fn                                         \
        __attribute__((used, section("rmx_subcmds"), aligned(sizeof(void *)))) = &rmx_subcmd_##fn

/* Runs the sub-command named by argv[1]; usage (sorted by name) on stdout for --help (exit 0),
 * on stderr with status 2 when none or an unknown one is named. Two entries of one name, or
 * none at all, are a build defect: one error line, status 1, whatever was asked. */
int rmx_subcmd_dispatch(const char *prog, int argc, char **argv);

#endif
