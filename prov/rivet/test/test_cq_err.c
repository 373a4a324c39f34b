// SPDX-License-Identifier: MIT
/* The words of error completions (rivet_cq_err.c): never "success". */
#include <string.h>

#include <criterion/criterion.h>

#include "rivet.h"

Test(cq_err, every_err_has_a_reason)
{
	static const int errs[] = {
		FI_ETRUNC, FI_ECANCELED, FI_ENOMSG, FI_ECONNRESET,
		FI_ECONNABORTED, FI_ECONNREFUSED, FI_EHOSTUNREACH,
		FI_ETIMEDOUT, FI_ENOMEM, FI_EACCES, FI_EIO, FI_EREMOTEIO,
	};
	size_t i;

	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		int perr = rivet_perr_of(errs[i]);

		cr_expect_gt(perr, RIVET_PERR_BASE);
		cr_expect_null(strstr(rivet_perr_str(perr), "uccess"));
	}
	cr_expect_eq(rivet_perr_of(FI_ECONNRESET), RIVET_PERR_CONN);
	cr_expect_eq(rivet_perr_of(FI_ECANCELED), RIVET_PERR_CANCELED);
}

Test(cq_err, verbs_status_named)
{
	cr_expect_str_eq(rivet_perr_str(IBV_WC_REM_ACCESS_ERR),
			 ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
	cr_expect_str_eq(rivet_perr_str(0), "unknown provider error");
}

Test(cq_err, text_names_operation_peer_and_reason)
{
	struct rivet_cq_entry e = {
		.flags = FI_RMA | FI_READ, .err = FI_EACCES,
		.prov_errno = IBV_WC_REM_ACCESS_ERR, .src = 3,
	};
	char buf[192];

	rivet_cq_err_text(&e, buf, sizeof(buf));
	cr_expect(strstr(buf, "RMA read to fi_addr 3"), "%s", buf);
	cr_expect(strstr(buf, "remote access error"), "%s", buf);
	e = (struct rivet_cq_entry) {
		.flags = FI_SEND | FI_TAGGED, .err = FI_EIO,
		.prov_errno = RIVET_PERR_PEER_RX, .src = FI_ADDR_NOTAVAIL,
	};
	rivet_cq_err_text(&e, buf, sizeof(buf));
	cr_expect(strstr(buf, "send failed: the receiver could not place"),
		  "%s", buf);
	e = (struct rivet_cq_entry) {
		.flags = FI_RECV | FI_MSG, .err = FI_ECONNRESET, .src = 7,
	};
	rivet_cq_err_text(&e, buf, sizeof(buf));
	cr_expect(strstr(buf, "receive from fi_addr 7 failed: the connection"),
		  "%s", buf);
	cr_expect_null(strstr(buf, "uccess"), "%s", buf);
}
