/* placeholder */ typedef int floe_placeholder_blowup;
