/* A shared object that is not a nodeplane plugin: it lacks np_plugin_entry. */
int not_a_plugin_answer(void);
int not_a_plugin_answer(void) { return 42; }
