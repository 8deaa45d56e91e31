// SPDX-License-Identifier: GPL-2.0-only
/*
 * plot: turn the --csv output of any experiment into a PNG with gnuplot.
 *
 * The CSV (see lzb_finish()) has comment lines "# table ID: TITLE", then per
 * table a header "table,COL,..." and rows "ID,VALUE,...".  One table is
 * plotted: y column(s) against an x column, one line per series (by default
 * the rows' text columns, e.g. "classic threads").  gnuplot is run through
 * popen() and fed inline data.
 */
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lzb.h"

#define PL_MAX_COLS	LZB_MAX_COLS
#define PL_MAX_ROWS	4096
#define PL_MAX_SERIES	64

struct pl_table {
	char id[64];
	char title[200];
	int ncols, nrows;
	char cols[PL_MAX_COLS][64];
	char *cells[PL_MAX_ROWS][PL_MAX_COLS];
};

static void __attribute__((noreturn, format(printf, 1, 2))) pl_die(const char *fmt, ...)
{
	va_list ap;

	fputs("lzchan-bench plot: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void pl_copy(char *dst, size_t len, const char *src)
{
	size_t n = strlen(src);

	if (n >= len)
		n = len - 1;
	memcpy(dst, src, n);
	dst[n] = 0;
}

/* Split one CSV line in place (RFC 4180 quotes); returns the field count. */
static int pl_split(char *line, char **f, int max)
{
	int n = 0;
	char *r = line, *w;

	line[strcspn(line, "\r\n")] = 0;
	while (n < max) {
		f[n++] = w = r;
		if (*r == '"') {
			r++;
			for (;;) {
				if (!*r)
					break;
				if (*r == '"' && r[1] == '"') {
					*w++ = '"';
					r += 2;
				} else if (*r == '"') {
					r++;
					break;
				} else {
					*w++ = *r++;
				}
			}
			while (*r && *r != ',')
				r++;
		} else {
			while (*r && *r != ',')
				*w++ = *r++;
		}
		if (!*r) {
			*w = 0;
			break;
		}
		*w = 0;
		r++;
	}
	return n;
}

static bool pl_is_num(const char *s, double *v)
{
	char *end;

	if (!s || !*s)
		return false;
	*v = strtod(s, &end);
	return !*end && isfinite(*v);
}

/* Read the table @want (NULL: the first one) from @f. */
static struct pl_table *pl_read(FILE *f, const char *want, char *seen, size_t seenlen)
{
	struct pl_table *t = calloc(1, sizeof(*t));
	char line[8192], *fld[PL_MAX_COLS + 1], title_id[64] = "", title[200] = "";
	int n, c;

	if (!t)
		pl_die("out of memory");
	seen[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "# table ", 8)) {
			char *colon = strstr(line + 8, ": ");

			if (colon) {
				*colon = 0;
				pl_copy(title_id, sizeof(title_id), line + 8);
				pl_copy(title, sizeof(title), colon + 2);
				title[strcspn(title, "\r\n")] = 0;
			}
			continue;
		}
		if (line[0] == '#' || line[0] == '\n')
			continue;
		n = pl_split(line, fld, PL_MAX_COLS + 1);
		if (!strcmp(fld[0], "table"))
			continue;	/* a header: the table's id comes with its rows */
		if (!t->id[0] && (!want || !strcmp(want, fld[0]))) {
			pl_copy(t->id, sizeof(t->id), fld[0]);
			if (!strcmp(title_id, fld[0]))
				pl_copy(t->title, sizeof(t->title), title);
		}
		if (!strstr(seen, fld[0]) && strlen(seen) + strlen(fld[0]) + 3 < seenlen) {
			if (seen[0])
				strcat(seen, ", ");
			strcat(seen, fld[0]);
		}
		if (strcmp(t->id, fld[0]))
			continue;
		if (t->nrows >= PL_MAX_ROWS)
			pl_die("table %s: more than %d rows", t->id, PL_MAX_ROWS);
		for (c = 1; c < n; c++)
			t->cells[t->nrows][c - 1] = strdup(fld[c]);
		t->nrows++;
	}
	return t;
}

/* Re-read the header of t->id: the column names. */
static void pl_header(FILE *f, struct pl_table *t)
{
	char line[8192], *fld[PL_MAX_COLS + 1], prev[8192] = "";
	int n, c;

	rewind(f);
	while (fgets(line, sizeof(line), f)) {
		char copy[8192];

		if (line[0] == '#')
			continue;
		pl_copy(copy, sizeof(copy), line);
		n = pl_split(copy, fld, PL_MAX_COLS + 1);
		if (!strcmp(fld[0], "table")) {
			pl_copy(prev, sizeof(prev), line);
			continue;
		}
		if (strcmp(fld[0], t->id) || !prev[0])
			continue;
		n = pl_split(prev, fld, PL_MAX_COLS + 1);
		for (c = 1; c < n; c++)
			pl_copy(t->cols[c - 1], sizeof(t->cols[0]), fld[c]);
		t->ncols = n - 1;
		return;
	}
}

/* Column by name: exact, or the name before its unit ("size" for "size_B"). */
static int pl_col(const struct pl_table *t, const char *name)
{
	char want[64];
	size_t len;
	int c;

	pl_copy(want, sizeof(want), name);
	for (char *p = want; *p; p++)
		if (*p == ' ' || *p == '/')
			*p = '_';
	len = strlen(want);
	for (c = 0; c < t->ncols; c++)
		if (!strcasecmp(t->cols[c], want))
			return c;
	for (c = 0; c < t->ncols; c++)
		if (!strncasecmp(t->cols[c], want, len) && t->cols[c][len] == '_')
			return c;
	return -1;
}

static bool pl_col_numeric(const struct pl_table *t, int c)
{
	double v;
	int r, nums = 0;

	for (r = 0; r < t->nrows; r++) {
		const char *s = t->cells[r][c];

		if (!s || !*s || !strcmp(s, "n/a") || !strcmp(s, "-"))
			continue;	/* missing */
		if (!pl_is_num(s, &v))
			return false;
		nums++;
	}
	return nums > 0;
}

static void pl_quote(FILE *g, const char *s)
{
	fputc('\'', g);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', g);
		fputc(*s, g);
	}
	fputc('\'', g);
}

static bool pl_have_gnuplot(void)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL, buf[4096];
	bool found = false;

	if (!path)
		return false;
	copy = strdup(path);
	if (!copy)
		pl_die("out of memory");
	for (dir = strtok_r(copy, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
		snprintf(buf, sizeof(buf), "%s/gnuplot", *dir ? dir : ".");
		found = access(buf, X_OK) == 0;
	}
	free(copy);
	return found;
}

static void pl_help(FILE *to)
{
	fprintf(to,
		"usage: lzchan-bench plot [OPTIONS] CSV_FILE|-\n"
		"\n"
		"Turn the --csv output of any experiment into a PNG with gnuplot:\n"
		"  lzchan-bench alt --csv > alt.csv\n"
		"  lzchan-bench plot -x size -y half_RTT --series transport --logx alt.csv\n"
		"\n"
		"  --out FILE      the PNG to write (default: TABLE.png)\n"
		"  --table ID      which table (default: the first in the file)\n"
		"  -x COL          x axis column (default: the first numeric column); a\n"
		"                  text column gives one tick per row\n"
		"  -y COL[,COL]    y column(s) (default: the first numeric column after x)\n"
		"  --series COL    one line per value of COL (default: the text columns)\n"
		"  --logx, --logy  logarithmic axes\n"
		"  --title TEXT    title (default: the table's)\n"
		"\n"
		"Columns are named as in the CSV header (\"half_RTT_ns\"), or without\n"
		"their unit (\"half_RTT\"); spaces may stand for underscores.\n"
		"Needs gnuplot (Debian: apt-get install gnuplot-nox).\n");
}

int lzb_cmd_plot(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, 'O' },
		{ "table", required_argument, NULL, 'T' },
		{ "series", required_argument, NULL, 'S' },
		{ "title", required_argument, NULL, 't' },
		{ "logx", no_argument, NULL, 'L' },
		{ "logy", no_argument, NULL, 'Y' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *out = NULL, *want = NULL, *xname = NULL, *ynames = NULL, *sname = NULL;
	const char *title = NULL;
	char seen[512], outbuf[128], *ylist, *tok, *save = NULL;
	char *series[PL_MAX_SERIES], key[256];
	int c, r, i, j, xc, yc[PL_MAX_COLS], ny = 0, sc = -1, nseries = 0, points = 0, st;
	bool logx = false, logy = false, xnum;
	struct pl_table *t;
	struct stat sb;
	FILE *in, *g;

	while ((c = getopt_long(argc, argv, "x:y:h", opts, NULL)) != -1) {
		switch (c) {
		case 'O': out = optarg; break;
		case 'T': want = optarg; break;
		case 'S': sname = optarg; break;
		case 't': title = optarg; break;
		case 'L': logx = true; break;
		case 'Y': logy = true; break;
		case 'x': xname = optarg; break;
		case 'y': ynames = optarg; break;
		case 'h':
			pl_help(stdout);
			return 0;
		default:
			lzb_usage_error("plot", "bad option");
		}
	}
	if (optind != argc - 1)
		lzb_usage_error("plot", "give one CSV file (or - for standard input)");
	if (!pl_have_gnuplot())
		pl_die("gnuplot not found: apt-get install gnuplot-nox");
	if (!strcmp(argv[optind], "-")) {
		/* Standard input cannot be rewound: keep a copy. */
		in = tmpfile();
		if (!in)
			pl_die("tmpfile: %s", strerror(errno));
		while ((c = getchar()) != EOF)
			fputc(c, in);
		rewind(in);
	} else if (!(in = fopen(argv[optind], "r"))) {
		int e = errno;

		pl_die("%s: %s (%s)", argv[optind], strerror(e), strerrorname_np(e) ? strerrorname_np(e) : "?");
	}
	t = pl_read(in, want, seen, sizeof(seen));
	if (!t->nrows) {
		if (want)
			pl_die("no table '%s' in %s (tables there: %s)", want, argv[optind],
			       seen[0] ? seen : "none");
		pl_die("%s has no table rows: give the --csv output of an experiment", argv[optind]);
	}
	pl_header(in, t);
	fclose(in);
	if (!t->ncols)
		pl_die("table %s has no header line (\"table,...\")", t->id);

	if (xname) {
		xc = pl_col(t, xname);
		if (xc < 0)
			pl_die("table %s has no column '%s'", t->id, xname);
	} else {
		for (xc = 0; xc < t->ncols && !pl_col_numeric(t, xc); xc++)
			;
		if (xc == t->ncols)
			pl_die("table %s has no numeric column", t->id);
	}
	xnum = pl_col_numeric(t, xc);
	if (ynames) {
		ylist = strdup(ynames);
		for (tok = strtok_r(ylist, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			int k = pl_col(t, tok);

			if (k < 0)
				pl_die("table %s has no column '%s'", t->id, tok);
			if (!pl_col_numeric(t, k))
				pl_die("column %s of table %s is not numeric", t->cols[k], t->id);
			yc[ny++] = k;
		}
		free(ylist);
	} else {
		for (i = xc + 1; i < t->ncols && !ny; i++)
			if (pl_col_numeric(t, i))
				yc[ny++] = i;
		if (!ny)
			pl_die("table %s has no numeric column after %s: name one with -y", t->id, t->cols[xc]);
	}
	if (sname) {
		sc = pl_col(t, sname);
		if (sc < 0)
			pl_die("table %s has no column '%s'", t->id, sname);
	}

	/* The series: a value of --series, or all text columns but x. */
	for (r = 0; r < t->nrows; r++) {
		key[0] = 0;
		for (i = 0; i < t->ncols; i++) {
			if (sc >= 0 ? i != sc : (i == xc || pl_col_numeric(t, i)))
				continue;
			if (t->cells[r][i] && strlen(key) + strlen(t->cells[r][i]) + 2 < sizeof(key)) {
				if (key[0])
					strcat(key, " ");
				strcat(key, t->cells[r][i]);
			}
		}
		for (j = 0; j < nseries && strcmp(series[j], key); j++)
			;
		if (j == nseries) {
			if (nseries == PL_MAX_SERIES)
				pl_die("more than %d series: pick a --series column", PL_MAX_SERIES);
			series[nseries++] = strdup(key);
		}
	}

	if (!out) {
		snprintf(outbuf, sizeof(outbuf), "%s.png", t->id);
		out = outbuf;
	}
	unlink(out);
	fflush(NULL);
	g = popen("gnuplot", "w");
	if (!g)
		pl_die("running gnuplot: %s", strerror(errno));
	fprintf(g, "set terminal pngcairo size 1000,650 noenhanced\nset output ");
	pl_quote(g, out);
	fprintf(g, "\nset title ");
	pl_quote(g, title ? title : t->title[0] ? t->title : t->id);
	fprintf(g, "\nset xlabel ");
	pl_quote(g, t->cols[xc]);
	fprintf(g, "\nset ylabel ");
	pl_quote(g, ny == 1 ? t->cols[yc[0]] : "");
	fprintf(g, "\nset grid\nset key outside right\nset datafile missing '?'\n");
	if (logx && xnum)
		fprintf(g, "set logscale x 2\n");
	if (logy)
		fprintf(g, "set logscale y\n");
	fprintf(g, "plot ");
	for (i = 0; i < ny; i++)
		for (j = 0; j < nseries; j++) {
			char name[400];

			if (ny > 1)
				snprintf(name, sizeof(name), "%s%s%s", series[j], series[j][0] ? " " : "",
					 t->cols[yc[i]]);
			else
				pl_copy(name, sizeof(name), series[j][0] ? series[j] : t->cols[yc[i]]);
			fprintf(g, "%s'-' using %s with linespoints title ", i || j ? ", " : "",
				xnum ? "1:2" : "2:xtic(1)");
			pl_quote(g, name);
		}
	fputc('\n', g);
	for (i = 0; i < ny; i++)
		for (j = 0; j < nseries; j++) {
			for (r = 0; r < t->nrows; r++) {
				const char *xs = t->cells[r][xc], *ys = t->cells[r][yc[i]];
				double v;

				key[0] = 0;
				for (int k = 0; k < t->ncols; k++) {
					if (sc >= 0 ? k != sc : (k == xc || pl_col_numeric(t, k)))
						continue;
					if (t->cells[r][k] && strlen(key) + strlen(t->cells[r][k]) + 2 < sizeof(key)) {
						if (key[0])
							strcat(key, " ");
						strcat(key, t->cells[r][k]);
					}
				}
				if (strcmp(key, series[j]))
					continue;
				if (xnum) {
					if (!pl_is_num(xs, &v) || (logx && v <= 0))
						continue;	/* no place on the axis */
					fprintf(g, "%s ", xs);
				} else {
					fprintf(g, "\"%s\" ", xs ? xs : "");
				}
				fprintf(g, "%s\n", pl_is_num(ys, &v) ? ys : "?");
				points++;
			}
			fprintf(g, "e\n");
		}
	st = pclose(g);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st))
		pl_die("gnuplot failed (exit %d): see its message above", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	if (stat(out, &sb) || !sb.st_size)
		pl_die("gnuplot wrote no %s", out);
	printf("wrote %s: table %s, %s against %s, %d series, %d points\n", out, t->id,
	       ny == 1 ? t->cols[yc[0]] : "several columns", t->cols[xc], nseries * ny, points);
	return 0;
}
