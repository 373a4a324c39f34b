/* SPDX-License-Identifier: MIT */
/*
 * The verbs seam: what every object needs around libibverbs and
 * librdmacm calls, in one place: their errno converted to a negative FI_E*
 * code (rivet_errno_to_fi).  The calls themselves are in the seam's
 * other files, one per library (rivet_verbs_ibv.c, rivet_verbs_cm.c),
 * which unit tests replace with scripted doubles, and discovery
 * (rivet_verbs_dev.c).  It calls nothing of
 * rivet's above it (contrib/layers.sh).
 */
#include "rivet.h"

/* errno (positive) from libibverbs/librdmacm/libc to a negative FI_E* code */
int rivet_errno_to_fi(int err)
{
	switch (err) {
	case 0:
		return 0;
	case EAGAIN:
		return -FI_EAGAIN;
	case ENOMEM:
		return -FI_ENOMEM;
	case EINVAL:
		return -FI_EINVAL;
	case ENOENT:
	case ENODEV:
		return -FI_ENODEV;
	case ENOSYS:
	case EOPNOTSUPP:
		return -FI_ENOSYS;
	case EBUSY:
		return -FI_EBUSY;
	case EADDRINUSE:
		return -FI_EADDRINUSE;
	case EADDRNOTAVAIL:
		return -FI_EADDRNOTAVAIL;
	case ECONNREFUSED:
		return -FI_ECONNREFUSED;
	case ETIMEDOUT:
		return -FI_ETIMEDOUT;
	case EHOSTUNREACH:
	case ENETUNREACH:
		return -FI_EHOSTUNREACH;
	case EACCES:
	case EPERM:
		return -FI_EACCES;
	case ENOSPC:
		return -FI_ENOSPC;
	default:
		return err > 0 ? -err : -FI_EOTHER;
	}
}
