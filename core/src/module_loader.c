/* placeholder */ typedef int floe_placeholder_module_loader;
