/* placeholder */ typedef int floe_placeholder_progress;
