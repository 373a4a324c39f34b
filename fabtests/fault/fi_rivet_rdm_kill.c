// SPDX-License-Identifier: MIT
/* A peer dies mid-transfer: the victim SIGKILLs itself while the client
 * has sends in flight to it; the client must get completions (errors),
 * not hang, and keep talking to a second, live peer (the survivor). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/ft_rdm.h"

#define KILL_MSGS 16
#define KILL_LEN (1 << 20)
#define KILL_RECEIVED 4		/* the victim takes these, then dies */
#define KILL_BIG (16 << 20)	/* streaming when the victim dies */
#define KILL_TAG_V 0x1000
#define KILL_TAG_ECHO 0x2000
#define KILL_TAG_REPLY 0x3000
#define KILL_TAG_QUIT 0x4000
#define KILL_TAG_INJ 0x5000
#define KILL_INJECTS 100000	/* at most, while the victim lives */
#define KILL_SERVE_MS 180000

enum kill_role { KILL_CLIENT, KILL_VICTIM, KILL_SURVIVOR };

struct kill_state {
	struct ft_fab fab;
	struct ft_rdm_ep ep;
	struct ft_buf tx;
	struct ft_buf rx;
	fi_addr_t victim;
	fi_addr_t survivor;
	fi_addr_t client;
	enum kill_role role;
	const char *dir;
	struct fi_context2 ctx[KILL_MSGS + 4];
};

static struct kill_state g_kill = { .dir = "/tmp/rivet-kill" };

static void kill_opt(int op, const char *arg)
{
	if (op == 'D') {
		g_kill.dir = arg;
	} else if (!strcmp(arg, "victim")) {
		g_kill.role = KILL_VICTIM;
	} else if (!strcmp(arg, "survivor")) {
		g_kill.role = KILL_SURVIVOR;
	} else if (!strcmp(arg, "client")) {
		g_kill.role = KILL_CLIENT;
	} else {
		fprintf(stderr, "-R: client, victim or survivor\n");
		exit(2);
	}
}

static int kill_recv(void *buf, size_t len, uint64_t tag, uint64_t ignore,
		     fi_addr_t src, void *ctx)
{
	return (int)FT_RDM_POST(fi_trecv(g_kill.ep.ep, buf, len, g_kill.rx.desc,
					 src, tag, ignore, ctx));
}

static int kill_send(void *buf, size_t len, fi_addr_t dest, uint64_t tag,
		     void *ctx)
{
	return (int)FT_RDM_POST(fi_tsend(g_kill.ep.ep, buf, len, g_kill.tx.desc,
					 dest, tag, ctx));
}

/* ---- victim and survivor ---------------------------------------------- */

/* Take the first messages, start on a large one, and die meanwhile. */
static void kill_victim(void)
{
	uint8_t *buf = g_kill.rx.ptr;
	struct ft_comp comp;
	int k;

	for (k = 0; k < KILL_RECEIVED; k++) {
		if (kill_recv(buf, KILL_LEN, KILL_TAG_V + k, 0, FI_ADDR_UNSPEC,
			      &g_kill.ctx[k]) ||
		    ft_rdm_wait(g_kill.ep.cq, &g_kill.ctx[k], &comp,
				ft_opts.timeout_ms) || comp.err ||
		    ft_verify(buf, KILL_LEN, k) >= 0) {
			ft_fail("kill_victim_received", "message %d", k);
			return;
		}
	}
	ft_ok("kill_victim_received");
	if (kill_recv(buf, KILL_BIG, KILL_TAG_V + KILL_MSGS, 0,
		      FI_ADDR_UNSPEC, &g_kill.ctx[0]))
		return;
	(void)ft_rdm_wait(g_kill.ep.cq, &g_kill.ctx[0], &comp, 20);
	ft_info("victim: SIGKILL to myself");
	fflush(stdout);
	raise(SIGKILL);
}

/* Echo every message back with the reply tag, until told to quit. */
static void kill_survivor(void)
{
	uint64_t end = ft_now_ms() + KILL_SERVE_MS;
	struct ft_comp comp;
	int n = 0;

	while (ft_now_ms() < end) {
		if (kill_recv(g_kill.rx.ptr, KILL_LEN, 0, 0xffff,
			      FI_ADDR_UNSPEC, &g_kill.ctx[0]) ||
		    ft_rdm_wait(g_kill.ep.cq, &g_kill.ctx[0], &comp,
				KILL_SERVE_MS) || comp.err)
			break;
		if (comp.tag == KILL_TAG_QUIT) {
			ft_check(n > 0, "kill_survivor_served", "no messages");
			return;
		}
		memcpy(g_kill.tx.ptr, g_kill.rx.ptr, comp.len);
		if (kill_send(g_kill.tx.ptr, comp.len, g_kill.client,
			      KILL_TAG_REPLY, &g_kill.ctx[1]) ||
		    ft_rdm_wait(g_kill.ep.cq, &g_kill.ctx[1], &comp,
				ft_opts.timeout_ms) || comp.err)
			break;
		n++;
	}
	ft_fail("kill_survivor_served", "stopped after %d echoes", n);
}

/* ---- client ------------------------------------------------------------ */

/* Round trips with the survivor, data checked both ways. */
static void kill_echo(const char *name, uint32_t seed)
{
	static const size_t lens[] = { 64, 65537, KILL_LEN };
	struct ft_comp comp;
	size_t i;
	int ret;

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		ft_fill(g_kill.tx.ptr, lens[i], seed + i);
		ret = kill_recv(g_kill.rx.ptr, lens[i], KILL_TAG_REPLY, 0,
				g_kill.survivor, &g_kill.ctx[0]);
		ret = ret ? ret : kill_send(g_kill.tx.ptr, lens[i],
					    g_kill.survivor, KILL_TAG_ECHO,
					    &g_kill.ctx[1]);
		ret = ret ? ret : ft_rdm_wait(g_kill.ep.cq, &g_kill.ctx[1],
					      &comp, ft_opts.timeout_ms);
		ret = ret ? ret : (comp.err ? -comp.err : 0);
		ret = ret ? ret : ft_rdm_wait(g_kill.ep.cq, &g_kill.ctx[0],
					      &comp, ft_rdm_timeout(lens[i]));
		ret = ret ? ret : (comp.err ? -comp.err : 0);
		if (ret || comp.len != lens[i] ||
		    ft_verify(g_kill.rx.ptr, lens[i], seed + i) >= 0) {
			ft_fail(name, "%zu bytes: %s", lens[i],
				ret ? fi_strerror(-ret) : "wrong echo");
			return;
		}
	}
	ft_ok(name);
}

/* Sends to the victim: KILL_MSGS of 1 MiB, then one large one. */
static int kill_fire(void)
{
	uint8_t *buf = g_kill.tx.ptr;
	int k, ret;

	for (k = 0; k < KILL_MSGS; k++) {
		ft_fill(buf + (size_t)k * KILL_LEN, KILL_LEN, k);
		ret = kill_send(buf + (size_t)k * KILL_LEN, KILL_LEN,
				g_kill.victim, KILL_TAG_V + k, &g_kill.ctx[k]);
		if (ret)
			break;
	}
	if (k == KILL_MSGS)
		ret = kill_send(buf, KILL_BIG, g_kill.victim,
				KILL_TAG_V + KILL_MSGS, &g_kill.ctx[k++]);
	if (ret)
		ft_fail("kill_fire", "send %d: %s", k, fi_strerror(-ret));
	return k;
}

/* Every operation posted to the victim must complete, one way or the
 * other, within one deadline; some of them cannot have succeeded.  Until
 * the first error, small injects go to the victim too (the connection is
 * up by then: a provider's short path for injects, if any, takes them):
 * those in flight when it dies may come back as errors without a context,
 * never as successes. */
static void kill_collect(int posted)
{
	uint64_t end = ft_now_ms() + ft_opts.timeout_ms;
	int done = 0, errors = 0, first_err = 0, injected = 0, inj_err = 0;
	int inj_ok = 0, stray = 0, ret;
	bool injecting = true;
	struct ft_comp comp;

	while (done < posted && ft_now_ms() < end) {
		/* as many as the provider takes: a victim that stopped
		 * taking messages leaves them in flight when it dies */
		ret = 0;
		while (injecting && injected < KILL_INJECTS &&
		       !(ret = (int)fi_tinject(g_kill.ep.ep, g_kill.rx.ptr,
					       64, g_kill.victim,
					       KILL_TAG_INJ)))
			injected++;
		if (ret && ret != -FI_EAGAIN)
			injecting = false;
		ret = ft_rdm_wait(g_kill.ep.cq, NULL, &comp,
				  injecting ? 1 : (int)(end - ft_now_ms()));
		if (ret == -FI_ETIMEDOUT && injecting)
			continue;
		if (ret)
			break;
		if (!comp.ctx) {	/* an inject's */
			comp.err ? inj_err++ : inj_ok++;
			continue;
		}
		done++;
		if (comp.err && !errors++)
			first_err = comp.err;
		injecting = injecting && !comp.err;
	}
	/* what else completes can only be the injects' */
	while (done == posted && !ft_rdm_wait(g_kill.ep.cq, NULL, &comp, 500)) {
		if (comp.ctx)
			stray++;
		else if (comp.err)
			inj_err++;
		else
			inj_ok++;
	}
	ft_info("%d of %d sends to the dead peer completed, %d with errors "
		"(first: %s); %d injects, %d of them failed", done, posted,
		errors, first_err ? fi_strerror(first_err) : "none", injected,
		inj_err);
	ft_check(done == posted, "kill_inflight_completed",
		 "%d of %d operations never completed", posted - done, posted);
	ft_check(errors > 0, "kill_error_completions",
		 "all %d sends to the dead peer succeeded", done);
	ft_check(inj_ok == 0 && inj_err <= injected && !stray,
		 "kill_inject_errors", "%d inject completions succeeded, %d "
		 "failed of %d; %d completions for sends already completed",
		 inj_ok, inj_err, injected, stray);
}

/* A new send to the dead peer must fail, at once or by completion. */
static void kill_send_to_dead(void)
{
	struct ft_comp comp;
	int ret;

	ret = kill_send(g_kill.tx.ptr, 64, g_kill.victim, KILL_TAG_V,
			&g_kill.ctx[0]);
	if (ret) {
		ft_check(ret != -FI_EAGAIN, "kill_send_to_dead",
			 "still -FI_EAGAIN after %d ms", ft_opts.timeout_ms);
		return;
	}
	ret = ft_rdm_wait(g_kill.ep.cq, &g_kill.ctx[0], &comp,
			  ft_opts.timeout_ms);
	if (ret)
		ft_fail("kill_send_to_dead", "no completion: %s",
			fi_strerror(-ret));
	else
		ft_check(comp.err, "kill_send_to_dead", "the send succeeded");
}

static void kill_client(void)
{
	int posted;

	kill_echo("kill_survivor_before", 100);
	posted = kill_fire();
	kill_collect(posted);
	kill_send_to_dead();
	kill_echo("kill_survivor_after", 200);
	if (kill_send(g_kill.tx.ptr, 0, g_kill.survivor, KILL_TAG_QUIT,
		      &g_kill.ctx[0]) == 0)
		ft_rdm_drain(g_kill.ep.cq, 200);
}

/* ---- setup ------------------------------------------------------------ */

static int kill_lookup(const char *key, fi_addr_t *addr_p)
{
	uint8_t name[FT_RDM_NAME_MAX];
	ssize_t len;

	len = ft_rdm_lookup(g_kill.dir, key, name, sizeof(name),
			    3 * ft_opts.timeout_ms);
	return len < 0 ? (int)len : ft_rdm_av_insert(g_kill.ep.av, name,
						     addr_p);
}

static int kill_names(void)
{
	static const char *const keys[] = { "client", "victim", "survivor" };
	int ret;

	ret = ft_rdm_publish(g_kill.dir, keys[g_kill.role], g_kill.ep.name,
			     g_kill.ep.namelen);
	if (ret || g_kill.role != KILL_CLIENT)
		return ret ? ret : kill_lookup("client", &g_kill.client);
	ret = kill_lookup("victim", &g_kill.victim);
	return ret ? ret : kill_lookup("survivor", &g_kill.survivor);
}

static int kill_setup(void)
{
	struct fi_info *hints = ft_rdm_hints(FT_RDM_CAPS, FI_THREAD_UNSPEC);
	size_t len = (size_t)KILL_MSGS * KILL_LEN;
	int ret;

	if (mkdir(g_kill.dir, 0755) && errno != EEXIST)
		ft_info("mkdir %s: %s", g_kill.dir, strerror(errno));
	ret = hints ? ft_rdm_fab_open(&g_kill.fab, hints, true) : -FI_ENOMEM;
	fi_freeinfo(hints);
	ret = ret ? ret : ft_rdm_ep_open(&g_kill.fab, NULL, true, 0,
					 &g_kill.ep);
	ret = ret ? ret : ft_buf_alloc(g_kill.fab.domain, len, FI_SEND,
				       &g_kill.tx);
	ret = ret ? ret : ft_buf_alloc(g_kill.fab.domain, len, FI_RECV,
				       &g_kill.rx);
	ret = ret ? ret : kill_names();
	return ft_check(!ret, "kill_setup", "%s", fi_strerror(-ret)) ? 0 : -1;
}

int main(int argc, char **argv)
{
	ft_opts.ep_type = FI_EP_RDM;
	ft_opts.timeout_ms = FT_RDM_DEADLINE_MS;
	ft_set_extra_opts("R:D:", " -R ROLE     client, victim (kills itself "
			  "mid-transfer) or survivor\n"
			  " -D DIR       folder for the names (default "
			  "/tmp/rivet-kill)\n", kill_opt);
	ft_parse_opts(argc, argv, "RDM peer killed mid-transfer.", false);
	if (!kill_setup()) {
		if (g_kill.role == KILL_VICTIM)
			kill_victim();
		else if (g_kill.role == KILL_SURVIVOR)
			kill_survivor();
		else
			kill_client();
	}
	ft_rdm_ep_close(&g_kill.ep);
	ft_buf_free(&g_kill.tx);
	ft_buf_free(&g_kill.rx);
	ft_fab_close(&g_kill.fab);
	return ft_summary();
}
