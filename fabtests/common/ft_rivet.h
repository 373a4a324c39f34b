/* SPDX-License-Identifier: MIT */
/* Shared helpers for rivet's conformance programs: options and results,
 * setup and data patterns (ft_rivet.c), MSG connections and bounded waits
 * (ft_conn.c), the out-of-band TCP channel (ft_oob.c). */
#ifndef FT_RIVET_H
#define FT_RIVET_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

/* The API of the headers built against: on libfabric 2.x these programs
 * are 2.x programs (88-byte error entries, 2.0's capability bits). */
#define FT_FIVERSION FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)
#define FT_DEFAULT_PORT "47601"
#define FT_DEFAULT_TIMEOUT_MS 10000
#define FT_MAX_ALL_SIZE (64UL << 20)
#define FT_CTRL_SIZE 4096
#define FT_CM_BUF_SIZE 512
#define FT_MAX_IOV 8

/* A wrapper around the library calls whose instructions a benchmark
 * counts (valgrind --tool=callgrind --collect-atstart=no
 * --toggle-collect='PREFIX*'): kept out of line and out of inter-
 * procedural analysis, so that callgrind sees every call. */
#if defined(__GNUC__) && !defined(__clang__)
#define FT_COUNTED __attribute__((noipa))
#else
#define FT_COUNTED __attribute__((noinline))
#endif

/* A -C client's polls that find nothing are counted too, and how many
 * there are depends on the host's load.  So after its run such a client
 * polls FT_PROBES more times, each behind the same pause, where nothing
 * is left to come, through a counted wrapper of its own (PREFIX_probe_*,
 * which calls the library itself: a wrapper called from another would
 * toggle callgrind's collection off), and prints "probe_polls: N" (those
 * that found nothing).  contrib/bench-guest.sh takes the probe wrapper's
 * cost per poll and subtracts it once for every one of empty_polls. */
#define FT_PROBES 200

/* Application-side mr_mode bits and mode bits the tests can satisfy. */
#define FT_MR_MODE (FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | \
		    FI_MR_PROV_KEY)
#define FT_MODE (FI_CONTEXT | FI_RX_CQ_DATA)

struct ft_opts {
	const char *prov;
	const char *domain;
	enum fi_ep_type ep_type;
	int iters;
	size_t size;		/* 0 with all_sizes */
	bool all_sizes;
	bool size_set;
	size_t max_size;	/* cap for "all" */
	const char *src_addr;
	const char *src_port;
	const char *dst_addr;	/* NULL: server */
	const char *dst_port;
	int timeout_ms;
	bool verbose;
	bool mr_offset;		/* -O: hints without FI_MR_VIRT_ADDR */
	uint32_t tclass;	/* -c: tx_attr->tclass asked for */
};

/* A registered buffer. */
struct ft_buf {
	void *ptr;
	size_t len;
	struct fid_mr *mr;
	void *desc;
};

/* Process-wide objects: fabric, domain and (server side) the listener. */
struct ft_fab {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *peq;
	struct fid_pep *pep;
};

/* One MSG connection and the objects it owns. */
struct ft_conn {
	struct fi_info *info;
	struct fid_ep *ep;
	struct fid_eq *eq;
	struct fid_cq *txcq;
	struct fid_cq *rxcq;
	uint64_t tx_bind_flags;	/* extra flags for the FI_TRANSMIT bind */
	struct fid_cntr *txcntr;	/* optional, bound FI_SEND if set */
	struct ft_buf ctrl_tx;
	struct ft_buf ctrl_rx;
	struct fi_context ctrl_tx_ctx;
	struct fi_context ctrl_rx_ctx;
};

extern struct ft_opts ft_opts;

/* results */
void ft_ok(const char *name);
void ft_fail(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void ft_skip(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
bool ft_check(bool cond, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void ft_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int ft_failures(void);
int ft_summary(void);
void ft_fork_case(const char *name, void (*fn)(void));

/* options */
void ft_parse_opts(int argc, char **argv, const char *desc, bool two_sided);
void ft_set_extra_opts(const char *optstr, const char *help,
		       void (*fn)(int op, const char *arg));
bool ft_is_server(void);
size_t ft_size_list(size_t max, size_t *sizes, size_t cap);
int ft_timeout_for(size_t len);

/* info and setup */
struct fi_info *ft_hints_alloc(uint64_t caps);
int ft_getinfo(struct fi_info *hints, struct fi_info **info_p);
int ft_fab_open(struct ft_fab *fab, struct fi_info *info);
void ft_fab_close(struct ft_fab *fab);
void ft_close_fid(fid_t fid, const char *what);
int ft_eq_open(struct fid_fabric *fabric, enum fi_wait_obj wait,
	       struct fid_eq **eq_p);
int ft_cq_open(struct fid_domain *domain, size_t size, enum fi_wait_obj wait,
	       struct fid_cq **cq_p);
int ft_buf_alloc(struct fid_domain *domain, size_t len, uint64_t access,
		 struct ft_buf *buf);
void ft_buf_free(struct ft_buf *buf);
const char *ft_addr_str(const void *addr, char *str, size_t len);

/* connections */
int ft_listen(struct ft_fab *fab);
int ft_wait_connreq(struct ft_fab *fab, struct fi_info **info_p, void *data,
		    size_t *data_len);
int ft_accept_req(struct ft_fab *fab, struct ft_conn *conn, void *data,
		  size_t *data_len);
int ft_conn_open(struct ft_fab *fab, struct ft_conn *conn,
		 struct fi_info *info);
int ft_accept_finish(struct ft_conn *conn, const void *param, size_t len,
		     void *data, size_t *data_len);
int ft_connect_start(struct ft_fab *fab, struct ft_conn *conn);
int ft_connect_finish(struct ft_conn *conn, const void *param, size_t len,
		      void *data, size_t *data_len);
int ft_server_connect(struct ft_fab *fab, struct ft_conn *conn);
int ft_client_connect(struct ft_fab *fab, struct ft_conn *conn);
void ft_conn_close(struct ft_conn *conn);
/* One process connecting to its own listener: the client's info (info
 * without its source address, to the listener's), and the request, with
 * control progress manual (eq, the client's EQ, is read meanwhile). */
int ft_self_client_info(const struct fi_info *info, struct fi_info **cinfo);
int ft_self_wait_connreq(struct ft_fab *fab, struct fid_eq *eq,
			 struct fi_info **req);

/* bounded waits */
ssize_t ft_eq_wait(struct fid_eq *eq, uint32_t *event, void *buf, size_t len,
		   struct fi_eq_err_entry *err, int timeout_ms);
int ft_eq_expect(struct fid_eq *eq, uint32_t want, fid_t fid, void *data,
		 size_t *data_len, int timeout_ms);
int ft_cq_wait(struct fid_cq *cq, struct fi_cq_data_entry *comp,
	       struct fi_cq_err_entry *err, int timeout_ms);
int ft_cq_expect(struct fid_cq *cq, void *ctx, struct fi_cq_data_entry *comp,
		 int timeout_ms);
bool ft_cq_empty(struct fid_cq *cq);
const char *ft_cq_errstr(struct fid_cq *cq, const struct fi_cq_err_entry *err);

/* control messages over a connection */
int ft_ctrl_post_recv(struct ft_conn *conn);
int ft_ctrl_send(struct ft_conn *conn, const void *msg, size_t len);
ssize_t ft_ctrl_recv(struct ft_conn *conn, void *msg, size_t len);

/* out-of-band TCP channel (server listen port + FT_OOB_PORT_OFFSET) for
 * barriers that must not depend on the provider under test */
#define FT_OOB_PORT_OFFSET 1000
void ft_oob_watch(struct fid_cq *txcq, struct fid_cq *rxcq);
int ft_oob_listen(void);
int ft_oob_accept(void);
int ft_oob_connect(void);
int ft_oob_send(const void *buf, size_t len);
int ft_oob_recv(void *buf, size_t len);
int ft_oob_sync(void);
int ft_oob_sync_ms(int timeout_ms);
void ft_oob_close(void);

/* data patterns */
void ft_fill(void *buf, size_t len, uint32_t seed);
/* Word idx (bytes 8 * idx ..) of the pattern ft_fill writes for seed. */
uint64_t ft_pattern_word(uint32_t seed, uint64_t idx);
ssize_t ft_verify(const void *buf, size_t len, uint32_t seed);
void ft_fill_iov(const struct iovec *iov, size_t cnt, uint32_t seed);
ssize_t ft_verify_iov(const struct iovec *iov, size_t cnt, uint32_t seed);
uint64_t ft_now_ms(void);
/* Prints "PREFIX_typical_us", "PREFIX_p99_us" and "PREFIX_max_us" of n
 * latencies in seconds times scale (sorts v): like perftest's t_typical
 * and 99% lines, next to the mean the caller prints. */
void ft_report_percentiles(const char *prefix, double *v, size_t n,
			   double scale);

/* Post an operation, retrying on -FI_EAGAIN until the timeout. */
#define FT_POST(call, cq, timeout_ms)					\
	({								\
		ssize_t ft_ret_;					\
		uint64_t ft_end_ = ft_now_ms() + (timeout_ms);		\
		do {							\
			ft_ret_ = (call);				\
			if (ft_ret_ != -FI_EAGAIN)			\
				break;					\
			(void)fi_cq_read((cq), NULL, 0);		\
		} while (ft_now_ms() < ft_end_);			\
		ft_ret_;						\
	})

#endif /* FT_RIVET_H */
