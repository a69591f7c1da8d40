/* placeholder */ typedef int floe_placeholder_yaml_lua;
