// SPDX-License-Identifier: MIT
/*
 * FI_SHARED_AV (fi_av(3): name, map_addr, FI_READ) between two processes
 * of one node: a process creates a named AV and inserts its own RDM
 * endpoint's address; another process, started before either touched
 * libfabric, opens the AV read-only, finds the address through map_addr
 * and fi_av_lookup, cannot insert into it or remove from it, and sends a
 * tagged message to the first through it.  A read-only open of a name
 * nobody made fails; the name goes away with its creator.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/ft_rdm.h"

#define SAV_TAG 0x5341560000000001ULL	/* "SAV" */
#define SAV_MSG "hello through a shared AV"
#define SAV_WAIT_MS 30000

static char g_name[64];

static int sav_fab_open(struct ft_fab *fab)
{
	struct fi_info *hints = ft_rdm_hints(FI_MSG | FI_TAGGED |
					     FI_SHARED_AV, FI_THREAD_SAFE);
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	hints->domain_attr->caps = FI_SHARED_AV;
	ret = ft_rdm_fab_open(fab, hints, true);
	fi_freeinfo(hints);
	return ret;
}

static int sav_av_open(struct ft_fab *fab, uint64_t flags,
		       struct fid_av **av, fi_addr_t **map)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE, .name = g_name,
				   .flags = flags };
	int ret = fi_av_open(fab->domain, &attr, av, NULL);

	if (!ret)
		*map = attr.map_addr;
	return ret;
}

/* The reader: waits for the creator's word, then uses its AV. */
static int sav_reader(int ready_fd, int *stage)
{
	const char *name = "shared_av_reader";
	struct ft_rdm_ep ep = { 0 };
	struct ft_fab fab = { 0 };
	struct fid_av *av = NULL;
	struct fi_context2 ctx;
	uint8_t peer[FT_RDM_NAME_MAX];
	size_t len = sizeof(peer);
	fi_addr_t *map = NULL, dst, none = 0;
	struct ft_comp c;
	char buf[64];
	int ret;

	*stage = 1;
	if (read(ready_fd, buf, 1) != 1 || sav_fab_open(&fab))
		return 1;
	*stage = 2;
	ret = sav_av_open(&fab, FI_READ, &av, &map);
	if (!ft_check(!ret && map, name, "fi_av_open(FI_READ): %s, map_addr "
		      "%p", fi_strerror(-ret), (void *)map))
		goto out;
	*stage = 3;
	dst = map[0];
	ret = fi_av_lookup(av, dst, peer, &len);
	if (!ft_check(!ret && dst == 0 && len > 0, name, "map_addr[0] %" PRIu64
		      ", lookup: %s", dst, fi_strerror(-ret)))
		goto out;
	ret = fi_av_insert(av, peer, 1, NULL, 0, NULL);
	ft_check(ret < 0, name, "an insert into a read-only AV returned %d",
		 ret);
	ret = fi_av_remove(av, &none, 1, 0);
	ft_check(ret < 0, name, "a removal from a read-only AV returned %d",
		 ret);
	*stage = 4;
	if (!ft_check(!ft_rdm_ep_open(&fab, av, true, 0, &ep), name,
		      "endpoint on the shared AV"))
		goto out;
	*stage = 5;
	snprintf(buf, sizeof(buf), "%s", SAV_MSG);
	ret = FT_RDM_POST(fi_tsend(ep.ep, buf, sizeof(SAV_MSG), NULL, dst,
				   SAV_TAG, &ctx));
	if (!ft_check(!ret, name, "fi_tsend: %s", fi_strerror(-ret)))
		goto out;
	ret = ft_rdm_wait(ep.cq, &ctx, &c, SAV_WAIT_MS);
	if (ft_check(!ret && !c.err, name, "send: %s", ret ?
		     fi_strerror(-ret) : ft_comp_str(&c)))
		*stage = 0;
out:
	if (ep.ep)
		ft_rdm_ep_close(&ep);
	if (av)
		fi_close(&av->fid);
	ft_fab_close(&fab);
	return *stage ? 1 : 0;
}

static void sav_child(void)
{
	const char *name = "shared_av";
	struct ft_rdm_ep ep = { 0 };
	struct ft_fab fab = { 0 };
	struct fid_av *av = NULL, *ro = NULL;
	struct fi_context2 ctx;
	fi_addr_t *map = NULL, self;
	int fds[2], status = -1, stage = 0;
	char buf[64] = { 0 };
	struct ft_comp c;
	pid_t pid;
	int ret;

	snprintf(g_name, sizeof(g_name), "ft-shared-%d", (int)getpid());
	if (pipe(fds))
		return;
	pid = fork();		/* before either process opens anything */
	if (!pid) {
		close(fds[1]);
		_exit(sav_reader(fds[0], &stage) ? 10 + stage : 0);
	}
	close(fds[0]);
	if (!ft_check(!sav_fab_open(&fab), name, "fi_getinfo with "
		      "FI_SHARED_AV"))
		goto out;
	ret = sav_av_open(&fab, FI_READ, &ro, &map);
	ft_check(ret == -FI_ENOENT || ret == -FI_ENODATA || ret == -FI_EINVAL,
		 "shared_av_readonly_needs_a_creator",
		 "FI_READ open of a name nobody made: %d", ret);
	if (!ret)
		fi_close(&ro->fid);
	ret = sav_av_open(&fab, 0, &av, &map);
	if (!ft_check(!ret && map, name, "fi_av_open(name): %s",
		      fi_strerror(-ret)) ||
	    !ft_check(!ft_rdm_ep_open(&fab, av, true, 0, &ep), name,
		      "endpoint") ||
	    !ft_check(!ft_rdm_av_insert(av, ep.name, &self) && self == 0 &&
		      map[0] == 0, name, "own address at %" PRIu64, self))
		goto out;
	ret = fi_trecv(ep.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC,
		       SAV_TAG, 0, &ctx);
	if (!ft_check(!ret, name, "fi_trecv: %s", fi_strerror(-ret)) ||
	    !ft_check(write(fds[1], "r", 1) == 1, name, "pipe"))
		goto out;
	ret = ft_rdm_wait(ep.cq, &ctx, &c, SAV_WAIT_MS);
	ft_check(!ret && !c.err && !strcmp(buf, SAV_MSG), name,
		 "receive: %s, \"%s\"", ret ? fi_strerror(-ret) :
		 ft_comp_str(&c), buf);
out:
	close(fds[1]);
	if (waitpid(pid, &status, 0) == pid)
		ft_check(WIFEXITED(status) && !WEXITSTATUS(status),
			 "shared_av_other_process", "the reader failed at "
			 "stage %d", WIFEXITED(status) ?
			 WEXITSTATUS(status) - 10 : -1);
	if (ep.ep)
		ft_rdm_ep_close(&ep);
	if (av)
		fi_close(&av->fid);
	ro = NULL;
	ret = fab.domain ? sav_av_open(&fab, FI_READ, &ro, &map) : 0;
	ft_check(ret, "shared_av_name_goes_with_creator", "the name outlived "
		 "its creator's close");
	if (!ret && ro)
		fi_close(&ro->fid);
	ft_fab_close(&fab);
}

int main(int argc, char **argv)
{
	ft_opts.ep_type = FI_EP_RDM;
	ft_parse_opts(argc, argv, "FI_SHARED_AV between two processes.",
		      false);
	ft_fork_case("shared_av", sav_child);
	return ft_summary();
}
