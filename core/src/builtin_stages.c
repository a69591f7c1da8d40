/* placeholder */ typedef int floe_placeholder_builtin_stages;
