/* placeholder */ typedef int floe_placeholder_ctx;
