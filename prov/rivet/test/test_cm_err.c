/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of rivet_eq_err.c: the prov_errno of EQ error entries (an
 * rdma_cm event and its status, or an errno) and fi_eq_strerror's text.
 */
#include <criterion/criterion.h>

#include "rivet.h"

Test(cm_err, pack_unpack_round_trip)
{
	static const int statuses[] = { 0, 1, 8, 28, 255, -110, -111, -1,
					INT16_MAX, INT16_MIN };
	int ev, event, status;
	size_t i;

	for (ev = RDMA_CM_EVENT_ADDR_RESOLVED;
	     ev <= RDMA_CM_EVENT_TIMEWAIT_EXIT; ev++) {
		for (i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
			int p = rivet_cm_err_pack(ev, statuses[i]);

			cr_assert_gt(p, 0xffff, "not told apart from an errno");
			cr_assert(rivet_cm_err_unpack(p, &event, &status));
			cr_assert_eq(event, ev);
			cr_assert_eq(status, statuses[i]);
		}
	}
	cr_assert_not(rivet_cm_err_unpack(ECONNREFUSED, &event, &status));
	cr_assert_not(rivet_cm_err_unpack(0, &event, &status));
}

/* What rxe reports when nobody listens: REJECTED with IB CM reason 8. The
 * old text was strerror(8), "Exec format error". */
Test(cm_err, refused_names_event_and_reason)
{
	char buf[160];
	int p = rivet_cm_err_pack(RDMA_CM_EVENT_REJECTED, 8);

	cr_assert_eq(rivet_cm_err_str(p, buf, sizeof(buf)), buf);
	cr_assert(strstr(buf, "RDMA_CM_EVENT_REJECTED"), "%s", buf);
	cr_assert(strstr(buf, "reject reason 8"), "%s", buf);
	cr_assert(strstr(buf, "nobody listens"), "%s", buf);
	cr_assert_null(strstr(buf, strerror(8)), "%s", buf);
	p = rivet_cm_err_pack(RDMA_CM_EVENT_REJECTED, 28);
	rivet_cm_err_str(p, buf, sizeof(buf));
	cr_assert(strstr(buf, "rejected by the peer"), "%s", buf);
}

Test(cm_err, negative_status_is_errno)
{
	char buf[160];
	int p = rivet_cm_err_pack(RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);

	rivet_cm_err_str(p, buf, sizeof(buf));
	cr_assert(strstr(buf, "RDMA_CM_EVENT_UNREACHABLE"), "%s", buf);
	cr_assert(strstr(buf, strerror(ETIMEDOUT)), "%s", buf);
	p = rivet_cm_err_pack(RDMA_CM_EVENT_ADDR_ERROR, -EHOSTUNREACH);
	rivet_cm_err_str(p, buf, sizeof(buf));
	cr_assert(strstr(buf, "RDMA_CM_EVENT_ADDR_ERROR"), "%s", buf);
	cr_assert(strstr(buf, strerror(EHOSTUNREACH)), "%s", buf);
}

Test(cm_err, plain_errno_and_none)
{
	char buf[160];

	rivet_cm_err_str(ENOMEM, buf, sizeof(buf));
	cr_assert(strstr(buf, strerror(ENOMEM)), "%s", buf);
	cr_assert(strstr(buf, "librdmacm"), "%s", buf);
	rivet_cm_err_str(0, buf, sizeof(buf));
	cr_assert(strstr(buf, "no provider error"), "%s", buf);
	/* a short buffer is cut, still terminated */
	rivet_cm_err_str(rivet_cm_err_pack(RDMA_CM_EVENT_REJECTED, 8), buf, 8);
	cr_assert_eq(strlen(buf), 7);
}
