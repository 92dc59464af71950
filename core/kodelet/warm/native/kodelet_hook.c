/* kodelet-hook: the native client of the warm kodelet, the program an agent runs per
 * hook call (``kodelet-hook claude hook [options]``, the hook input on stdin).
 *
 * It speaks the warm kodelet's protocol exactly as the lean Python client does
 * (kodelet/warm/protocol.py: the identity, the project rule, the key, the private
 * runtime directory, the socket's owner and its listener's uid, the framing, the
 * acknowledgement and its wait) and prints the warm kodelet's answer. Whatever it
 * cannot do or is unsure of (no warm kodelet yet, another version, a refusal, a
 * wedged or lost warm kodelet, any unexpected reply, any error) it hands to the
 * Python client by exec'ing it with the same arguments and the same input, so a
 * missing or broken native client costs speed, never a guard. It never answers a
 * call on its own.
 *
 * C99 and POSIX, no dependency. An editable install (setup.py) compiles two absolute
 * paths in: KODELET_PACKAGE (the kodelet package) and KODELET_PYTHON (the interpreter
 * that runs the Python client). A wheel's program has neither: it finds both from its
 * own real location at run time (locate(), below), so one binary serves every venv,
 * `pip install --user`, pipx and `uv tool` layout and every CPython it is installed for.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#ifdef __APPLE__
#include <mach-o/dyld.h>
#define st_mtim st_mtimespec
#endif

#ifndef KODELET_PACKAGE
#define KODELET_PACKAGE ""
#endif
#ifndef KODELET_PYTHON
#define KODELET_PYTHON ""
#endif

#define PROTOCOL "2"
#define MAGIC "KODELET-WARM"
#define INPUT_CAP ((size_t)64 * 1024 * 1024)
#define ACK_WAIT 2.0
#define NOT_YET "no warm kodelet yet"

extern char **environ;

typedef struct {
    char *data;
    size_t len, cap;
} Buf;

static int buf_add(Buf *b, const void *data, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1) cap *= 2;
        char *grown = realloc(b->data, cap);
        if (!grown) return -1;
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

static int buf_str(Buf *b, const char *s) { return buf_add(b, s, strlen(s) + 1); }

/* ---- SHA-256 (FIPS 180-4), for the warm kodelet's key --------------------------- */

static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(uint32_t h[8], const unsigned char *p) {
    uint32_t w[64], a, b, c, d, e, f, g, k, t1, t2;
    int i;
    for (i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (i = 0; i < 64; i++) {
        t1 = k + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K256[i] + w[i];
        t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

static void sha256_hex(const unsigned char *data, size_t n, char out[65]) {
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    unsigned char tail[128];
    size_t i, rest = n % 64, pad = rest < 56 ? 64 : 128;
    uint64_t bits = (uint64_t)n * 8;
    for (i = 0; i + 64 <= n; i += 64) sha256_block(h, data + i);
    memset(tail, 0, sizeof tail);
    memcpy(tail, data + i, rest);
    tail[rest] = 0x80;
    for (i = 0; i < 8; i++) tail[pad - 1 - i] = (unsigned char)(bits >> (8 * i));
    sha256_block(h, tail);
    if (pad == 128) sha256_block(h, tail + 64);
    for (i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", (unsigned)(h[i / 4] >> (24 - 8 * (i % 4))) & 0xff);
}

/* ---- paths, as Python's os.path does them --------------------------------------- */

/* posixpath.abspath: joined to the working directory, then normalised lexically. */
static char *abspath(const char *path, const char *cwd) {
    size_t size = strlen(path) + strlen(cwd) + 3;
    char *joined = malloc(size), *out = malloc(size), *seg, *save = NULL;
    size_t len = 0;
    int lead;
    if (!joined || !out) return NULL;
    if (path[0] == '/') snprintf(joined, size, "%s", path);
    else snprintf(joined, size, "%s/%s", cwd, path);
    lead = joined[0] == '/' ? (joined[1] == '/' && joined[2] != '/' ? 2 : 1) : 0;
    for (int i = 0; i < lead; i++) out[len++] = '/';
    out[len] = '\0';
    for (seg = strtok_r(joined, "/", &save); seg; seg = strtok_r(NULL, "/", &save)) {
        if (!strcmp(seg, ".")) continue;
        if (!strcmp(seg, "..")) {
            char *cut = strrchr(out + lead, '/');
            len = cut ? (size_t)(cut - out) : (size_t)lead;
            out[len] = '\0';
            continue;
        }
        if (len > (size_t)lead) out[len++] = '/';
        memcpy(out + len, seg, strlen(seg) + 1);
        len += strlen(seg);
    }
    if (!len) strcpy(out, ".");
    free(joined);
    return out;
}

static char *join(const char *a, const char *b) {
    size_t n = strlen(a);
    char *out = malloc(n + strlen(b) + 2);
    if (out) sprintf(out, n && a[n - 1] == '/' ? "%s%s" : "%s/%s", a, b);
    return out;
}

static char *dirname_of(const char *path) {
    char *out = strdup(path), *cut = out ? strrchr(out, '/') : NULL;
    if (cut) *(cut == out ? cut + 1 : cut) = '\0';
    return out;
}

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- what the client works out: the Python client, identity, project, key ------- */

typedef struct {
    int argc;
    char **argv;
    const char *python, *hook_py;
    Buf input;
    int have_input, trace;
} Call;

static void note(const Call *c, const char *what) {
    if (c->trace) fprintf(stderr, "kodelet-hook: %s\n", what);
}

/* Hand the call to the Python client: the same arguments, the input it was given.
 * ``lost`` (the warm kodelet took the call and failed): the Python client answers it
 * as a failure of kodelet and runs nothing again. */
/* A call the warm kodelet is there for but did not take (a wedge, a refusal) is answered
   by the Python client in-process at once ("claude here"), not offered to it again. */
static const char *const HERE = "here";

static int hand_over(Call *c, const char *why, const char *lost) {
    char **args = calloc((size_t)c->argc + 8, sizeof *args);
    int n = 0, fd;
    char trace[600];
    snprintf(trace, sizeof trace, "handed to the Python client: %s", why);
    note(c, trace);
    if (!c->python || !c->hook_py || !args) {
        fprintf(stderr,
                "kodelet-hook: cannot find kodelet's Python client (%s), so its guards cannot "
                "run and the call is blocked; reinstall kodelet (its README: Installing "
                "kodelet)\n", c->hook_py ? "its interpreter is gone" : "its package is gone");
        return 2;
    }
    args[n++] = (char *)c->python;
    args[n++] = "-I";
    args[n++] = "-S";
    args[n++] = (char *)c->hook_py;
    if (lost == HERE) {
        args[n++] = "claude";
        args[n++] = "here";
    } else if (lost) {
        args[n++] = "claude";
        args[n++] = "lost";
        args[n++] = (char *)lost;
    }
    for (int i = 1; i < c->argc; i++) args[n++] = c->argv[i];
    args[n] = NULL;
    if (c->have_input) {
#ifdef __linux__
        fd = memfd_create("kodelet-hook-input", MFD_CLOEXEC);
#else
        fd = -1;
#endif
        if (fd < 0) {
            char tmpl[] = "/tmp/kodelet-hook-XXXXXX";
            fd = mkstemp(tmpl);
            if (fd >= 0) unlink(tmpl);
        }
        size_t done = 0;
        while (fd >= 0 && done < c->input.len) {
            ssize_t w = write(fd, c->input.data + done, c->input.len - done);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) break;
            done += (size_t)w;
        }
        if (fd < 0 || done != c->input.len || lseek(fd, 0, SEEK_SET) != 0 || dup2(fd, 0) < 0) {
            fprintf(stderr, "kodelet-hook: cannot hand the call to the Python client (%s); "
                            "the call is blocked\n", strerror(errno));
            return 2;
        }
        if (fd != 0) close(fd);
    }
    execv(c->python, args);
    fprintf(stderr, "kodelet-hook: cannot start %s (%s), so kodelet's guards cannot run and "
                    "the call is blocked; reinstall kodelet\n", c->python, strerror(errno));
    return 2;
}

/* This program's folder, symlinks resolved: pipx and `uv tool` put a symlink on PATH
 * into their venv's bin, where the interpreter and the package are found from. */
static char *own_folder(const char *argv0) {
    char self[PATH_MAX], real[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        return dirname_of(self);
    }
#ifdef __APPLE__
    {
        uint32_t size = sizeof self;
        if (_NSGetExecutablePath(self, &size) == 0 && realpath(self, real))
            return dirname_of(real);
    }
#endif
    if (strchr(argv0, '/') && realpath(argv0, real)) return dirname_of(real);
    return NULL;
}

static int runnable(const char *path) {
    struct stat st;
    return path && path[0] == '/' && stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
           access(path, X_OK) == 0;
}

/* The interpreter named by `kodelet`, the console script pip wrote beside this program
 * (`#!/path/python`, or for a long path `#!/bin/sh` then `'''exec' "/path/python"`, or
 * with single quotes):
 * the one interpreter a `pip install --user` or a system install leaves no copy of here. */
static char *shebang_python(const char *here) {
    char head[4096], *path = join(here, "kodelet"), *start = NULL, *base;
    size_t n;
    FILE *f = path ? fopen(path, "rb") : NULL;
    free(path);
    if (!f) return NULL;
    n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[n] = '\0';
    if (!strncmp(head, "#!/bin/sh\n'''exec' ", 19) && (head[19] == '"' || head[19] == '\'')) {
        const char stop[] = {head[19], '\n', '\0'};
        start = head + 20;
        start[strcspn(start, stop)] = '\0';
    } else if (!strncmp(head, "#!/", 3)) {
        start = head + 2;
        start[strcspn(start, " \t\r\n")] = '\0';
    }
    base = start ? strrchr(start, '/') : NULL;
    if (!base || strncmp(base + 1, "python", 6)) return NULL; /* not sh, nor a bare name */
    return runnable(start) ? strdup(start) : NULL;
}

/* The kodelet package of a wheel's program: in the site-packages of the installation
 * whose bin holds it (`../lib/python3.X/site-packages`, Debian's dist-packages, macOS's
 * `--user` `../lib/python/site-packages`). Of several Pythons' packages, the one whose
 * `python3.X` is beside this program; `version` gets that `python3.X`. */
static char *find_package(const char *here, char **version) {
    const char *patterns[] = {"lib/python3.*/site-packages/kodelet/warm/hook.py",
                              "lib/python3*/dist-packages/kodelet/warm/hook.py",
                              "lib/python/site-packages/kodelet/warm/hook.py"};
    char *found = NULL, *prefix = dirname_of(here);
    *version = NULL;
    if (!prefix) return NULL;
    for (size_t p = 0; p < sizeof patterns / sizeof *patterns && !found; p++) {
        glob_t g;
        char *pattern = join(prefix, patterns[p]);
        if (!pattern) return NULL;
        if (glob(pattern, 0, NULL, &g) == 0) {
            for (size_t i = 0; i < g.gl_pathc && !*version; i++) {
                char *lib = strstr(g.gl_pathv[i], "/lib/python"), *name, *python = NULL;
                if (!lib || !(name = strdup(lib + 5))) continue;
                name[strcspn(name, "/")] = '\0';
                python = join(here, name);
                if (runnable(python)) *version = strdup(name);
                if (!found || *version) {
                    free(found);
                    found = strdup(g.gl_pathv[i]);
                }
                free(python);
                free(name);
            }
            globfree(&g);
        }
        free(pattern);
    }
    free(prefix);
    if (found) found[strlen(found) - strlen("/warm/hook.py")] = '\0';
    return found;
}

/* The kodelet package (holding warm/protocol.py) and the interpreter of its client:
 * compiled in by an editable install, else found from where this program really is. */
static void locate(Call *c) {
    char *here = own_folder(c->argv[0]), *pkg = NULL, *version = NULL;
    if (KODELET_PACKAGE[0] == '/') pkg = strdup(KODELET_PACKAGE);
    else if (here && KODELET_PACKAGE[0]) pkg = join(here, KODELET_PACKAGE);
    else if (here) pkg = find_package(here, &version);
    if (pkg) {
        char *hook_py = join(pkg, "warm/hook.py");
        if (hook_py && access(hook_py, R_OK) == 0) c->hook_py = hook_py;
    }
    if (runnable(KODELET_PYTHON)) c->python = KODELET_PYTHON;
    else if (here) { /* python3.X of the package, the console script's, python3, python */
        const char *names[] = {version, NULL, "python3", "python"};
        for (int i = version ? 0 : 1; i < 4 && !c->python; i++) {
            char *candidate = names[i] ? join(here, names[i]) : shebang_python(here);
            if (runnable(candidate)) c->python = candidate;
        }
    }
}

/* protocol.identity(): protocol, version, and this copy of kodelet. */
static char *identity(const char *hook_py) {
    char *warm = dirname_of(hook_py), *proto, *version_path, *pkg, real[PATH_MAX];
    char version[64] = "", *ident, *package;
    struct stat st;
    FILE *f;
    size_t n;
    if (!warm) return NULL;
    proto = join(warm, "protocol.py");
    version_path = join(warm, "../VERSION");
    if (!proto || !version_path || !realpath(proto, real) || stat(real, &st) != 0) return NULL;
    if (!(f = fopen(version_path, "rb"))) return NULL;
    n = fread(version, 1, sizeof version - 1, f);
    fclose(f);
    version[n] = '\0';
    while (n && strchr(" \t\r\n\v\f", version[n - 1])) version[--n] = '\0';
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)version[i] <= ' ' || (unsigned char)version[i] >= 0x7f) return NULL;
    if (!n || n >= sizeof version - 2) return NULL;
    pkg = dirname_of(real);
    package = pkg ? dirname_of(pkg) : NULL;
    if (!package) return NULL;
    ident = malloc(strlen(package) + 128);
    if (!ident) return NULL;
    sprintf(ident, "%s:%s:%lld:%s", PROTOCOL, version,
            (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec, package);
    return ident;
}

static char *kodelet_home(void) {
    const char *home = getenv("HOME"), *chosen = getenv("KODELET_HOME");
    if (chosen && *chosen) return strdup(chosen);
    if (!home || !*home) return NULL; /* Python asks the password database: its call */
    return join(home, ".kodelet");
}

/* protocol.find_project() */
static char *find_project(const char *cwd) {
    const char *pinned = getenv("CLAUDE_PROJECT_DIR");
    char *home = kodelet_home(), *root, *start, *dir, *repository = NULL;
    if (!home) return NULL;
    if (pinned && pinned[0] == '/' && is_dir(pinned)) cwd = pinned;
    root = abspath(home, cwd);
    start = abspath(cwd, cwd);
    if (!root || !start) return NULL;
    dir = strdup(start);
    for (;;) {
        char *local = join(dir, ".kodelet"), *git = join(dir, ".git"), *normal, *parent;
        struct stat st;
        if (!local || !git) return NULL;
        normal = abspath(local, cwd);
        if (is_dir(local) && normal && strcmp(normal, root) != 0) return dir;
        if (!repository && lstat(git, &st) == 0) repository = strdup(dir);
        parent = dirname_of(dir);
        if (!parent || !strcmp(parent, dir)) return repository ? repository : start;
        dir = parent;
    }
}

static int by_string(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* protocol.key(): one warm kodelet per (copy, project, home, KODELET_* settings). */
static int key(const char *ident, const char *project, char out[25]) {
    Buf text = {0};
    char **settings, hex[65], *home = kodelet_home();
    size_t count = 0, i;
    for (i = 0; environ[i]; i++) count++;
    settings = calloc(count + 1, sizeof *settings);
    if (!settings || !home) return -1;
    count = 0;
    for (i = 0; environ[i]; i++) {
        const char *e = environ[i];
        if (strncmp(e, "KODELET_", 8) || !strchr(e, '=')) continue;
        if (!strncmp(e, "KODELET_DAEMON", 14) || !strncmp(e, "KODELET_LOG_LEVEL", 17)) continue;
        for (const char *p = e; *p; p++)
            if ((unsigned char)*p >= 0x80) return -1; /* Python's sort may differ */
        for (size_t j = 0; j < count; j++) /* Python keeps one value per name */
            if (!strncmp(settings[j], e, (size_t)(strchr(e, '=') - e) + 1)) return -1;
        settings[count++] = (char *)e;
    }
    qsort(settings, count, sizeof *settings, by_string);
    if (buf_str(&text, ident) || buf_str(&text, project) || buf_add(&text, home, strlen(home)))
        return -1;
    for (i = 0; i < count; i++)
        if (buf_add(&text, "", 1) || buf_add(&text, settings[i], strlen(settings[i]))) return -1;
    sha256_hex((const unsigned char *)text.data, text.len, hex);
    memcpy(out, hex, 24);
    out[24] = '\0';
    return 0;
}

/* protocol.runtime_dir() and private_dir(create=True) */
static char *runtime_dir(const char *cwd) {
    const char *chosen = getenv("KODELET_DAEMON_DIR"), *xdg = getenv("XDG_RUNTIME_DIR");
    char *path, fallback[64];
    struct stat st;
    if (chosen && *chosen) path = abspath(chosen, cwd);
    else if (xdg && xdg[0] == '/' && is_dir(xdg)) path = join(xdg, "kodelet");
    else {
        snprintf(fallback, sizeof fallback, "/tmp/kodelet-%u", (unsigned)getuid());
        path = strdup(fallback);
    }
    if (!path) return NULL;
    if (mkdir(path, 0700) != 0 && errno != EEXIST) return NULL;
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
        (st.st_mode & 077))
        return NULL;
    return path;
}

static double ack_wait(void) {
    const char *text = getenv("KODELET_DAEMON_ACK");
    char *end;
    double value;
    if (!text || !*text) return ACK_WAIT;
    value = strtod(text, &end);
    while (*end == ' ' || *end == '\t' || *end == '\n') end++;
    if (*end || end == text) return ACK_WAIT;
    return value > 0 && value < 86400 ? value : ACK_WAIT;
}

/* ---- the call ------------------------------------------------------------------ */

static int peer_uid(int fd, uid_t *uid) {
#ifdef SO_PEERCRED
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
    *uid = cred.uid;
    return 0;
#else
    gid_t gid;
    return getpeereid(fd, uid, &gid);
#endif
}

static void set_wait(int fd, double seconds) {
    struct timeval tv;
    tv.tv_sec = (time_t)seconds;
    tv.tv_usec = (suseconds_t)((seconds - (double)tv.tv_sec) * 1e6);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0
#endif

static int send_all(int fd, const char *data, size_t n) {
    while (n) {
        ssize_t w = send(fd, data, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        data += w, n -= (size_t)w;
    }
    return 0;
}

static void write_all(int fd, const char *data, size_t n) {
    while (n) {
        ssize_t w = write(fd, data, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        data += w, n -= (size_t)w;
    }
}

/* The warm kodelet's reply (protocol.parse_reply): 0 with status, code, out and err. */
static int parse_reply(char *data, size_t len, const char *ident, const char **status,
                       long *code, char **out, size_t *out_len, char **err, size_t *err_len) {
    char *parts[5], *p = data, *end = data + len, *rest, *stop;
    unsigned long long n;
    for (int i = 0; i < 5; i++) {
        char *nul = memchr(p, '\0', (size_t)(end - p));
        if (!nul) return -1;
        parts[i] = p;
        p = nul + 1;
    }
    rest = p;
    if (strcmp(parts[0], MAGIC) || strcmp(parts[1], ident)) return -1;
    if (!*parts[3] || !*parts[4]) return -1;
    errno = 0;
    *code = strtol(parts[3], &stop, 10);
    if (*stop || errno) return -1;
    for (const char *d = parts[4]; *d; d++)
        if (*d < '0' || *d > '9') return -1;
    n = strtoull(parts[4], NULL, 10);
    if (n > (unsigned long long)(end - rest)) return -1;
    *status = parts[2];
    *out = rest, *out_len = (size_t)n;
    *err = rest + n, *err_len = (size_t)(end - rest) - (size_t)n;
    return 0;
}

int main(int argc, char **argv) {
    Call c = {0};
    char *cwd, *project, *ident, *dir, *socket_path, name[25], head[32], first, *lost;
    const char *off = getenv("KODELET_DAEMON"), *trace = getenv("KODELET_DAEMON_TRACE");
    Buf payload = {0}, answer = {0};
    struct stat st;
    struct sockaddr_un addr;
    uid_t peer;
    int fd, i;
    ssize_t got;

    c.argc = argc, c.argv = argv;
    c.trace = trace && *trace && strcmp(trace, "0");
    locate(&c);
    if (argc == 2 && !strcmp(argv[1], "--where")) { /* what `kodelet daemon status` asks */
        if (!c.hook_py || !c.python) return 1;
        printf("native\n%s\n%s\n", c.hook_py, c.python);
        return 0;
    }
    if (argc < 3 || strcmp(argv[1], "claude") || strcmp(argv[2], "hook"))
        return hand_over(&c, "not a hook call", NULL);
    for (i = 3; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            return hand_over(&c, "help", NULL);
    for (;;) { /* the input, read whole (as far as the Python client would read it) */
        char chunk[65536];
        size_t want = INPUT_CAP + 1 - c.input.len;
        got = read(0, chunk, want < sizeof chunk ? want : sizeof chunk);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        if (buf_add(&c.input, chunk, (size_t)got)) return hand_over(&c, "out of memory", NULL);
        c.have_input = 1;
        if (c.input.len > INPUT_CAP) return hand_over(&c, "input over the cap", NULL);
    }
    c.have_input = 1;
    if (!c.input.data && buf_add(&c.input, "", 0)) return hand_over(&c, "out of memory", NULL);
    if (off && (!strcmp(off, "0") || !strcmp(off, "off") || !strcmp(off, "false") ||
                !strcmp(off, "no")))
        return hand_over(&c, "the warm kodelet is off", NULL);
    if (!c.hook_py || !c.python) return hand_over(&c, "kodelet not found", NULL);
    if (!(cwd = getcwd(NULL, 0))) return hand_over(&c, "no working directory", NULL);
    if (!(ident = identity(c.hook_py))) return hand_over(&c, "no identity", NULL);
    if (!(project = find_project(cwd))) return hand_over(&c, "no project", NULL);
    if (!(dir = runtime_dir(cwd))) return hand_over(&c, "runtime directory refused", NULL);
    if (key(ident, project, name)) return hand_over(&c, "no key", NULL);
    socket_path = malloc(strlen(dir) + 32);
    if (!socket_path) return hand_over(&c, "out of memory", NULL);
    sprintf(socket_path, "%s/%s.sock", dir, name);

    /* protocol.request() */
    snprintf(head, sizeof head, "%d", argc - 3);
    const char *pinned = getenv("CLAUDE_PROJECT_DIR");
    if (buf_str(&payload, MAGIC) || buf_str(&payload, PROTOCOL) || buf_str(&payload, ident) ||
        buf_str(&payload, "claude-hook") || buf_str(&payload, cwd) ||
        buf_str(&payload, pinned ? pinned : "") || buf_str(&payload, head))
        return hand_over(&c, "out of memory", NULL);
    for (i = 3; i < argc; i++)
        if (buf_str(&payload, argv[i])) return hand_over(&c, "out of memory", NULL);
    if (buf_add(&payload, c.input.data, c.input.len)) return hand_over(&c, "out of memory", NULL);

    /* protocol.call() */
    if (lstat(socket_path, &st) != 0) return hand_over(&c, NOT_YET, NULL);
    if (!S_ISSOCK(st.st_mode) || st.st_uid != getuid())
        return hand_over(&c, "not this user's socket", NULL);
    if (strlen(socket_path) >= sizeof addr.sun_path)
        return hand_over(&c, "socket path too long", NULL);
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    strcpy(addr.sun_path, socket_path);
    if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0) return hand_over(&c, "no socket", NULL);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
#ifdef SO_NOSIGPIPE
    { int one = 1; setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one); }
#endif
    set_wait(fd, ack_wait());
    while (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0)
        if (errno != EINTR) return hand_over(&c, "cannot connect", NULL);
    if (peer_uid(fd, &peer) != 0 || peer != getuid())
        return hand_over(&c, "the socket's listener is another user", NULL);
    snprintf(head, sizeof head, "%zu", payload.len);
    if (send_all(fd, head, strlen(head) + 1) || send_all(fd, payload.data, payload.len))
        return hand_over(&c, "the warm kodelet did not take the request", NULL);
    while ((got = recv(fd, &first, 1, 0)) < 0 && errno == EINTR) {}
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) /* a wedge: nothing ran */
        return hand_over(&c, "the warm kodelet did not take the call in time", HERE);
    if (got != 1 || first != 'A') /* a refusal, another version: nothing ran */
        return hand_over(&c, "the warm kodelet did not take the call", NULL);
    if (send_all(fd, "G", 1)) return hand_over(&c, "the warm kodelet failed before GO", HERE);

    /* From here the call is the warm kodelet's: its hooks may run, so never again. */
    set_wait(fd, 0);
    lost = "the warm kodelet failed mid-call after it had taken the call; its hooks may "
           "have run, so the call is not run again";
    for (;;) {
        char chunk[65536];
        got = recv(fd, chunk, sizeof chunk, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return hand_over(&c, "lost", lost);
        if (got == 0) break;
        if (buf_add(&answer, chunk, (size_t)got) || answer.len > 2 * INPUT_CAP)
            return hand_over(&c, "lost", lost);
    }
    close(fd);
    {
        const char *status;
        long code;
        char *out, *err;
        size_t out_len, err_len;
        if (!answer.data ||
            parse_reply(answer.data, answer.len, ident, &status, &code, &out, &out_len, &err,
                        &err_len) != 0)
            return hand_over(&c, "lost", lost);
        if (strcmp(status, "ok") != 0) /* as the Python client: answered there */
            return hand_over(&c, "the warm kodelet refused the call", HERE);
        note(&c, "answered by the warm kodelet");
        write_all(1, out, out_len);
        write_all(2, err, err_len);
        return (int)(code & 0xff);
    }
}
