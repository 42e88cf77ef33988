# btl_siwarp/local.mk - placeholder; owned by the btl_siwarp owner (append with +=).
