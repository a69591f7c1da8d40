/* placeholder */ typedef int floe_placeholder_w;
